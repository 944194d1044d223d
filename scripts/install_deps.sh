#!/usr/bin/env bash
# Installs every system and Python dependency the project needs (Debian + PyPI).
set -euo pipefail
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
PKGS="cmake g++ ninja-build pkg-config libtbb-dev libopenblas-dev libgloo-dev libgtest-dev pybind11-dev
  coinor-libcbc-dev nlohmann-json3-dev libcpp-httplib-dev zlib1g-dev libcli11-dev"
missing=""
for p in $PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q $missing
fi
python3 -m pip install -q --disable-pip-version-check numpy pytest pytest-xdist \
  scikit-build-core pybind11 matplotlib tqdm
# PyTorch: the tests' and benchmarks' reference (its PyPI wheel, with its CUDA libraries; the
# CPU-only index is not reachable from here). About 75 s on a fresh machine.
python3 -m pip install -q --disable-pip-version-check torch
# expecttest: torch.testing._internal's test databases (OpInfo, ModuleInfo, OptimizerInfo) import
# it; tools/torch_conformance.py and its CI guard read those databases as the oracle.
python3 -m pip install -q --disable-pip-version-check expecttest==0.3.0
# The OpenAI Python client: the tests talk to the server's /v1/completions through a client we did
# not write.
python3 -m pip install -q --disable-pip-version-check openai
# cuDNN's header-only C++ front end, for CUDA builds' fused attention (its headers only: none of
# the Python package's requirements).
python3 -m pip install -q --disable-pip-version-check --no-deps nvidia-cudnn-frontend
# The documentation's tools: scripts/run_tests.sh builds docs/ with MkDocs in strict mode, and the
# API reference page comes from the package's docstrings through mkdocstrings.
python3 -m pip install -q --disable-pip-version-check mkdocs==1.6.1 mkdocstrings==1.0.8 \
  mkdocstrings-python==2.0.11
