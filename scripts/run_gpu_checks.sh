#!/usr/bin/env bash
# The GPU tier and the GPU benchmarks, for a machine with NVIDIA GPUs (after scripts/build.sh):
# the CUDA and NCCL C++ tests, the Python GPU tests, then bench_ops and the GPT training step
# against PyTorch CUDA. Logs go to $1 (default gpu-checks/), one file per part.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-gpu-checks}
mkdir -p "$out"
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
status=0
ctest --test-dir build/py --output-on-failure -R 'Nccl|DeviceComm|Api' > "$out/ctest.txt" 2>&1 ||
  status=1
python3 -m pytest -q -p no:cacheprovider tests/python/test_cuda.py tests/python/test_cuda_ops.py \
  tests/python/test_cuda_ops_nn.py tests/python/test_cuda_global.py tests/python/test_amp.py \
  > "$out/pytest.txt" 2>&1 || status=1
python3 benchmarks/bench_ops.py --device cuda > "$out/bench_ops.txt" 2>&1 || status=1
python3 benchmarks/bench_train_step.py --device cuda --dtype bfloat16 --compile --n-layer 12 \
  --n-head 12 --n-embd 768 --block-size 1024 --batch-size 8 > "$out/bench_train_step.txt" 2>&1 ||
  status=1
tail -n 3 "$out"/*.txt
exit $status
