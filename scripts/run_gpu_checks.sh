#!/usr/bin/env bash
# The GPU tier and the GPU benchmarks, for a machine with NVIDIA GPUs (after scripts/build.sh, or
# scripts/setup_gpu_machine.sh on a machine without registries): the CUDA and NCCL C++ tests, the
# Python GPU tests, then bench_ops and the GPT training step against PyTorch CUDA, and (part
# `profile`) the cost model's spec of the machine measured by profile_cluster.
#   scripts/run_gpu_checks.sh [logdir] [tests] [bench] [profile]   (default: gpu-checks/, all)
# Logs go to logdir, one file per part, written as they run (a killed run keeps what it said).
# For a short lease: TEST_TIMEOUT (seconds a test, default 180) and BENCH_TIMEOUT (seconds a
# benchmark, default none) keep one hung case from eating the rest.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-gpu-checks}
shift || true
parts=${*:-tests bench profile}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
status=0
if [[ " $parts " == *" tests "* ]]; then
  t=${TEST_TIMEOUT:-180}
  ctest --test-dir build/py --output-on-failure --timeout "$t" -R 'Nccl|DeviceComm|Api|Build' \
    > "$out/ctest.txt" 2>&1 || status=1
  # The GPU tier (tests/python/conftest.py), on eight workers where pytest-xdist is there.
  opts=()
  python3 -c 'import pytest_timeout' 2>/dev/null && opts+=(--timeout="$t")
  python3 -c 'import xdist' 2>/dev/null && opts+=(-n 8)
  python3 -m pytest -m gpu -rfEs -p no:cacheprovider --durations=15 "${opts[@]}" tests/python \
    > "$out/pytest.txt" 2>&1 || status=1
fi
if [[ " $parts " == *" bench "* ]]; then
  bt=${BENCH_TIMEOUT:-0}
  bench() {  # bench NAME ARGS...: benchmarks/NAME.py into $out/NAME.txt
    timeout "$bt" python3 "benchmarks/$1.py" "${@:2}" > "$out/$1.txt" 2>&1 || status=1
  }
  # The training step first: the figure (against PyTorch, with MFU) a short lease wants most.
  bench bench_train_step --device cuda --dtype bfloat16 --compile --n-layer 12 --n-head 12 \
    --n-embd 768 --block-size 1024 --batch-size 8
  bench bench_ops --device cuda
  bench bench_optimizer --device cuda
fi
if [[ " $parts " == *" profile "* ]]; then
  # This machine's spec for the cost model (a GPU a rank; tables of matmul and collective
  # times), to keep in specs/ and price plans with.
  gpus=$(nvidia-smi -L | wc -l)
  timeout "${PROFILE_TIMEOUT:-300}" python3 -m oneflowlike.tools.profile_cluster --device cuda \
    --nproc "$gpus" --table --out "$out/spec_gpu.json" > "$out/profile.txt" 2>&1 || status=1
fi
tail -n 3 "$out"/*.txt
exit $status
