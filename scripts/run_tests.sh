#!/usr/bin/env bash
# Installs dependencies, builds, builds the docs (strict), and runs every test: C++ (ctest) then
# Python (pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
phase() { echo "== $1: $((SECONDS - started)) s"; started=$SECONDS; }  # each phase's time
started=$SECONDS
scripts/install_deps.sh
phase dependencies
status=0
# CUDA code is compile-tested here for one virtual architecture, compute_90 (the lent GPU
# machines' H100 and H200), unoptimised (ONEFLOWLIKE_CUDA_CHECK_ONLY): nvcc's front end and code
# generation to PTX run on every kernel; the assembly of PTX into sm_90 machine code (ptxas, a
# third of nvcc's time) and the optimisers run where a GPU does (scripts/setup_gpu_machine.sh
# builds for the GPU it finds). run_example.sh and users' builds keep CMake's default list (sm_80
# and sm_90), optimised.
scripts/build.sh -Ccmake.define.CMAKE_CUDA_ARCHITECTURES=90-virtual \
  -Ccmake.define.ONEFLOWLIKE_CUDA_CHECK_ONLY=ON
phase build
# The docs (docs/, mkdocs.yml), strict: a broken link, anchor or docstring fails the run. After
# the build: the op reference page is generated from the built package's registry.
if docs_log=$(python3 -m mkdocs build --strict -d build/docs 2>&1); then
  echo "docs: mkdocs build --strict passed, $(ls docs/*.md | wc -l) pages + the op reference" \
    "in build/docs ($(grep -o 'built in [0-9.]* seconds' <<<"$docs_log"))"
else
  printf '%s\n' "$docs_log"
  echo "docs: mkdocs build --strict FAILED"
  status=1
fi
phase docs
# Four at a time on 2 cores: each GoogleTest suite is its own process (tests/cpp/
# discover_suites.cmake), loading the library and its CUDA libraries is much of a small suite's
# time, and the communicator tests' waits overlap (35 s here; 74 s with a process per case, two
# at a time).
ctest --test-dir build/py --output-on-failure -j4 || status=1
phase ctest
# Two pytest workers (pytest-xdist), each taking whole files (a file's session fixtures, such as
# its single-process reference runs, are made once): the multi-process tests wait on sockets and
# timeouts as much as they compute, so two at a time fill the 2 cores (5 min 24 s alone, 3 min
# 20 s so, on this machine). The slowest tests, to keep the suite's time in view as it grows.
python3 -m pytest tests/python -q -p no:cacheprovider -n 2 --dist loadfile --durations=15 ||
  status=1
phase pytest
exit $status
