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
# CUDA code is compile-tested for one architecture here (sm_90, the lent GPU machines' H100 and
# H200): a second one doubles nvcc's time and checks nothing more. run_example.sh and users'
# builds keep CMake's default list (80 and 90).
scripts/build.sh -Ccmake.define.CMAKE_CUDA_ARCHITECTURES=90
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
ctest --test-dir build/py --output-on-failure -j2 || status=1
phase ctest
# The slowest tests, to keep the suite's time in view as it grows.
python3 -m pytest tests/python -q -p no:cacheprovider --durations=15 || status=1
phase pytest
exit $status
