#!/usr/bin/env bash
# Builds the library and the C++ API tests with AddressSanitizer (+ LeakSanitizer and UB
# sanitizer) and with ThreadSanitizer, each in its own folder, and runs the API tests there: the
# graphs they load are saved by the installed Python package (scripts/build.sh first).
#   scripts/run_sanitizers.sh [address|thread]...   (default: both)
# Under ThreadSanitizer oneTBB runs one thread (OFL_NUM_THREADS=1): its scheduler is not
# instrumented, so only the API's own threads (8 callers of one graph) are checked.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizers=("${@:-address thread}")
saved=$(mktemp -d)
trap 'rm -rf "$saved"' EXIT
PYTHONPATH=. python3 tests/cpp/api/save_graphs.py "$saved"
for san in ${sanitizers[@]}; do
  dir=build/sanitize-$san
  flags=(-DONEFLOWLIKE_SANITIZE_${san^^}=ON)
  [ "$san" = address ] && flags+=(-DONEFLOWLIKE_SANITIZE_UNDEFINED=ON)
  # -O1 -g1: a sanitizer build of every source at -O2 -g takes half an hour on two cores.
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
    -DONEFLOWLIKE_BUILD_PYTHON=OFF \
    -DONEFLOWLIKE_BUILD_CUDA=OFF -DONEFLOWLIKE_BUILD_TESTS=ON "${flags[@]}" >/dev/null
  cmake --build "$dir" --target oneflowlike_api_tests
  echo "== $san sanitizer: C++ API tests"
  env OFL_API_SAVED="$saved" OFL_NUM_THREADS=$([ "$san" = thread ] && echo 1 || echo 2) \
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    "$dir/tests/cpp/api/oneflowlike_api_tests"
done
