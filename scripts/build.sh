#!/usr/bin/env bash
# Builds and installs the Python package (and the C++ tests) into build/py, incrementally.
# Arguments go to pip (-Ccmake.define.NAME=VALUE for CMake).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --no-build-isolation --disable-pip-version-check -q \
  -Cbuild-dir=build/py -Ccmake.define.ONEFLOWLIKE_BUILD_TESTS=ON \
  -Ccmake.args=-GNinja "$@" .
