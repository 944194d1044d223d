#!/usr/bin/env bash
# OneFlow 0.9.0, the system we imitate, in a Python 3.10 virtual environment of its own, for
# benchmarks/bench_vs_oneflow.py (not part of the tests: the wheel is about 1 GB). Its CUDA 11
# wheel runs on the CPU here with cuDNN and cuBLAS from PyPI on LD_LIBRARY_PATH (set by
# bench_vs_oneflow.py from the venv); a warning about the CUDA driver at import is expected.
#
#   scripts/setup_oneflow.sh [VENV]     (default: $OFL_ONEFLOW_VENV or ~/.cache/oneflowlike/oneflow-venv)
set -euo pipefail
venv="${1:-${OFL_ONEFLOW_VENV:-$HOME/.cache/oneflowlike/oneflow-venv}}"

python310=""
pyenv_root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
for candidate in "$pyenv_root"/versions/3.10*/bin/python3.10 python3.10; do
  # A pyenv shim exists whether or not it can run: ask the interpreter itself.
  if "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 10)' 2>/dev/null; then
    python310="$candidate"
    break
  fi
done
if [[ -z "$python310" ]]; then
  echo "setup_oneflow: OneFlow 0.9.0's wheels need Python 3.10; install it (pyenv install 3.10)" >&2
  exit 1
fi

if [[ ! -x "$venv/bin/python" ]]; then
  "$python310" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --disable-pip-version-check -q --upgrade pip
"$venv/bin/python" -m pip install --disable-pip-version-check -q \
  oneflow==0.9.0 "numpy<1.24" nvidia-cudnn-cu11==8.5.0.96 nvidia-cublas-cu11==11.10.3.66
echo "OneFlow 0.9.0 is in $venv"
