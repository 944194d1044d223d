"""The CUDA device runtime: flow.cuda, moving tensors and modules between the host and GPUs
(every dtype, any layout, converting on the way), the caching allocator's statistics. The GPU
tier skips, saying why, where no GPU is visible; the errors without one are checked always."""

import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import oneflowlike as flow
from oneflowlike import nn
from test_ops_elementwise import CAST_DTYPES as DTYPES  # every dtype

GPU = flow.cuda.is_available()
needs_gpu = pytest.mark.gpu  # the GPU tier: conftest.py skips it, saying why, without a GPU


@pytest.mark.skipif(GPU, reason="checks the errors of a machine without a GPU")
def test_without_a_gpu_every_cuda_use_raises_naming_the_device():
    assert flow.cuda.device_count() == 0 and not flow.cuda.is_available()
    with pytest.raises(RuntimeError, match=r"cuda:0 is not available: 0 CUDA devices visible"):
        flow.zeros(2, device="cuda")
    with pytest.raises(RuntimeError, match=r"\[to\] cuda:1 is not available: 0 cuda devices"):
        flow.ones(2).to("cuda:1")
    with pytest.raises(RuntimeError, match=r"cuda:0 is not available"):
        flow.cuda.memory_allocated()
    with pytest.raises(RuntimeError, match=r"cuda:0 is not available"):
        flow.cuda.synchronize()
    with pytest.raises(RuntimeError, match=r"cuda:0 is not available"):
        nn.Linear(2, 2).cuda()
    flow.cuda.empty_cache()  # nothing to give back: no error


def _run(code, package_parent=None):
    env = None
    if package_parent is not None:
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(package_parent)}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env
    )


@pytest.mark.multiprocess
def test_a_process_on_cpu_tensors_loads_no_cuda_library():
    # The CUDA backend is a library of its own, loaded on first use (core/backend_loader.cpp):
    # each of a test run's hundreds of processes saved 0.15 s of CPU loading cuBLAS and cuDNN.
    p = _run("""
        import oneflowlike as flow
        x = flow.randn(4, 4, requires_grad=True)
        (x @ x).relu().sum().backward()
        def loaded():
            maps = open("/proc/self/maps").read()
            return [lib for lib in ("oneflowlike_cuda", "libcudart", "libcublas", "libcudnn")
                    if lib in maps]
        print(loaded())
        print(flow.cuda.is_available(), loaded())
    """)
    assert p.returncode == 0, p.stderr
    before, after = p.stdout.splitlines()
    assert before == "[]"
    if flow._C.has_backend("cuda"):  # asked, it loads
        assert after.endswith("['oneflowlike_cuda', 'libcudart', 'libcublas', 'libcudnn']")


@pytest.mark.multiprocess
@pytest.mark.parametrize("damage", ["missing", "truncated"])
def test_a_missing_or_damaged_cuda_backend_raises_naming_the_library(tmp_path, damage):
    package = Path(flow.__file__).parent
    shutil.copytree(package, tmp_path / "oneflowlike", ignore=shutil.ignore_patterns("include"))
    backend = tmp_path / "oneflowlike" / "liboneflowlike_cuda.so"
    if damage == "missing":
        backend.unlink(missing_ok=True)
        why = r"this build has no CUDA backend \(no .*liboneflowlike_cuda.so"
    else:
        backend.write_bytes(b"\x7fELF damaged")
        why = r"the CUDA backend .*liboneflowlike_cuda.so did not load: .*"
    p = _run(
        """
        import oneflowlike as flow
        print((flow.ones(2) * 3).sum().item(), flow.cuda.is_available())
        try:
            flow.zeros(2, device="cuda")
        except RuntimeError as e:
            print(e)
        """,
        tmp_path,
    )
    assert p.returncode == 0, p.stderr
    works, error = p.stdout.splitlines()
    assert works == "6.0 False"  # the CPU is untouched
    assert re.search(r"^\[cuda\] cuda:0 is not available: 0 CUDA devices visible \(" + why, error)


def _values(dtype, shape=(3, 5)):
    rng = np.random.default_rng(0)
    if dtype == flow.bool:
        return flow.tensor(rng.integers(0, 2, shape).astype(bool))
    return flow.tensor(rng.integers(-4, 5, shape).astype(np.float32)).to(dtype)


def _np(t):
    return (t.float() if t.dtype == flow.bfloat16 else t).numpy()


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_goes_to_the_gpu_and_back(dtype):
    x = _values(dtype)
    y = x.to("cuda")
    assert y.device == flow.device("cuda:0") and y.dtype == dtype
    np.testing.assert_array_equal(_np(y.cpu()), _np(x))


@needs_gpu
def test_strided_broadcast_and_converting_copies_both_ways():
    x = flow.arange(24, dtype=flow.float32).reshape(2, 3, 4)
    t = x.permute(2, 0, 1)  # not contiguous
    np.testing.assert_array_equal(t.cuda().cpu().numpy(), t.numpy())
    g = x.cuda().permute(2, 0, 1)  # a strided view on the GPU, back to the host
    np.testing.assert_array_equal(g.cpu().numpy(), t.numpy())
    h = x.to("cuda", dtype=flow.float16)
    assert h.dtype == flow.float16
    np.testing.assert_array_equal(h.cpu().float().numpy(), x.numpy())
    dst = flow.zeros(2, 3, 4, device="cuda")
    dst.copy_(flow.arange(4, dtype=flow.float64))  # from the host, broadcast and converted
    np.testing.assert_array_equal(dst.cpu().numpy(), np.broadcast_to(np.arange(4.0), (2, 3, 4)))
    host = flow.zeros(4, 2, 3)
    host.copy_(g)  # from the GPU into a host tensor
    np.testing.assert_array_equal(host.numpy(), t.numpy())


@needs_gpu
def test_creation_on_the_gpu_and_fills_of_strided_views():
    assert flow.ones(3, device="cuda").cpu().tolist() == [1.0, 1.0, 1.0]
    z = flow.full((4, 6), 2.5, device="cuda")
    z.t().fill_(7)  # a strided view, every element
    assert (z.cpu().numpy() == 7).all()


@needs_gpu
def test_the_caching_allocator_counts_and_gives_back_memory():
    flow.cuda.synchronize()
    flow.cuda.empty_cache()
    base = flow.cuda.memory_allocated()
    x = flow.empty(1 << 20, device="cuda")  # 4 MiB
    assert flow.cuda.memory_allocated() - base >= 4 << 20
    assert flow.cuda.max_memory_allocated() >= flow.cuda.memory_allocated()
    reserved = flow.cuda.memory_reserved()
    del x
    assert flow.cuda.memory_allocated() == base
    assert flow.cuda.memory_reserved() == reserved  # cached for reuse
    flow.cuda.empty_cache()
    assert flow.cuda.memory_reserved() < reserved
    flow.cuda.reset_peak_memory_stats()
    assert flow.cuda.max_memory_allocated() == flow.cuda.memory_allocated()


@needs_gpu
def test_modules_move_with_their_parameters():
    m = nn.Linear(3, 2).cuda()
    assert all(p.device == flow.device("cuda:0") for p in m.parameters())
    w = m.weight.cpu()
    m.cpu()
    np.testing.assert_array_equal(m.weight.numpy(), w.numpy())


@needs_gpu
@pytest.mark.skipif(flow.cuda.device_count() < 2, reason="needs two CUDA devices")
def test_from_one_gpu_to_another():
    x = flow.arange(10, dtype=flow.float32).cuda()
    y = x.to("cuda:1")
    assert y.device == flow.device("cuda:1")
    np.testing.assert_array_equal(y.cpu().numpy(), np.arange(10.0))
    np.testing.assert_array_equal(x[::2].to("cuda:1").cpu().numpy(), np.arange(0.0, 10.0, 2))


def test_the_tf32_switch_is_off_by_default_and_toggles():
    assert flow.backends.cuda.matmul.allow_tf32 is False
    try:
        flow.backends.cuda.matmul.allow_tf32 = True
        assert flow.backends.cuda.matmul.allow_tf32 is True
        # CPU matmuls ignore it: they stay exact float32.
        a = flow.tensor(np.random.default_rng(0).uniform(-1, 1, (8, 8)), dtype=flow.float32)
        np.testing.assert_allclose((a @ a).numpy(), a.numpy() @ a.numpy(), rtol=1e-5, atol=1e-6)
    finally:
        flow.backends.cuda.matmul.allow_tf32 = False


def test_the_cudnn_tf32_switch_is_on_by_default_and_toggles():
    assert flow.backends.cudnn.allow_tf32 is True
    try:
        flow.backends.cudnn.allow_tf32 = False
        assert flow.backends.cudnn.allow_tf32 is False
    finally:
        flow.backends.cudnn.allow_tf32 = True


def test_every_op_has_a_kernel_for_each_device_type_the_build_has():
    assert flow._C.kernels_missing("cpu") == []
    if flow._C.has_backend("cuda"):
        assert flow._C.kernels_missing("cuda") == []
    else:  # a CPU-only build: every CUDA call raises "[op] has no cuda kernel in this build"
        assert "matmul_kernel" in flow._C.kernels_missing("cuda")


@needs_gpu
def test_moving_between_devices_is_differentiable():
    x = flow.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x.cuda() * 2).to("cpu").cuda()
    y.sum().backward()
    assert x.grad.device == flow.device("cpu")
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])
