#!/usr/bin/env bash
# Coverage-guided fuzzing of the parsers that read what others wrote (tests/fuzz): builds the
# library and the targets with clang, libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer
# in build/fuzz, then runs each target for SECONDS (default 60) on a copy of its seed corpus,
# printing libFuzzer's final statistics (executions, coverage). A crash leaves its input in
# build/fuzz/findings/<target>/ and fails the script.
#   scripts/run_fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("${@:-fuzz_safetensors fuzz_graph_json fuzz_store_wire fuzz_server_request}")
dir=build/fuzz
# -O1 -g1 as the sanitizer builds (scripts/run_sanitizers.sh): a full -O2 build is too slow here.
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DONEFLOWLIKE_BUILD_FUZZERS=ON \
  -DONEFLOWLIKE_SANITIZE_ADDRESS=ON -DONEFLOWLIKE_SANITIZE_UNDEFINED=ON \
  -DONEFLOWLIKE_BUILD_PYTHON=OFF -DONEFLOWLIKE_BUILD_CUDA=OFF -DONEFLOWLIKE_BUILD_TESTS=OFF \
  >/dev/null
cmake --build "$dir" --target ${targets[@]}
# The server target serves a graph: the example GPT, saved by the installed Python package.
python3 examples/cpp/save_gpt.py "$dir/gpt" >/dev/null
export OFL_FUZZ_GRAPH=$PWD/$dir/gpt
status=0
for target in ${targets[@]}; do
  corpus=$dir/corpus/$target findings=$dir/findings/$target
  mkdir -p "$corpus" "$findings"
  cp -n tests/fuzz/corpus/$target/* "$corpus"/ 2>/dev/null || true
  echo "== $target for $seconds s"
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=0 \
    "$dir/tests/fuzz/$target" "$corpus" -max_total_time="$seconds" -print_final_stats=1 \
    -rss_limit_mb=4096 -max_len=65536 -artifact_prefix="$findings/" -close_fd_mask=2 \
    2>&1 | grep -E "(DONE|stat::|SUMMARY|==[0-9]+==ERROR|INFO: seed corpus|runtime error)" || status=1
done
exit $status
