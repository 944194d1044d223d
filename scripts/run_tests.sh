#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test: C++ (ctest) then Python (pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
status=0
ctest --test-dir build/py --output-on-failure -j2 || status=1
python3 -m pytest tests/python -q -p no:cacheprovider || status=1
exit $status
