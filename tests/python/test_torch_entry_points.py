"""What `import torch` programs touch first, before any model: the seeding and device queries of
torch.cuda that are safe without a GPU, torch.backends' submodules as importable modules,
torch.accelerator, and the Tensor's device flags. Checked against PyTorch's own answers on this
machine where both can answer."""

import subprocess
import sys

import pytest

import oneflowlike as flow

torch = pytest.importorskip("torch")


@pytest.mark.multiprocess
def test_backends_submodules_import_as_modules():
    # `import torch.backends.cudnn` is how programs reach it; a fresh interpreter, so that an
    # attribute set by an earlier import cannot stand in for the submodule.
    code = (
        "import oneflowlike.backends.cudnn as c, oneflowlike.backends.cuda, "
        "oneflowlike.backends.mps as m, oneflowlike.backends.mkldnn, oneflowlike.backends.openmp;"
        " c.benchmark = True; c.deterministic = True; assert c.benchmark and c.deterministic;"
        " assert m.is_available() is False; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_cudnn_tf32_is_a_module_attribute_with_its_setting_behind_it():
    assert flow.backends.cudnn.allow_tf32 is True
    try:
        flow.backends.cudnn.allow_tf32 = False
        assert flow._C.conv_allow_tf32() is False
    finally:
        flow.backends.cudnn.allow_tf32 = True


def test_cuda_seeding_and_queries_without_a_gpu_answer_as_pytorch_does():
    flow.cuda.manual_seed_all(5)
    a = flow.rand(4)
    flow.cuda.manual_seed(5)
    assert a.tolist() == flow.rand(4).tolist()
    assert flow.cuda.initial_seed() == 5
    assert flow.cuda.is_available() == (flow.cuda.device_count() > 0)
    if not torch.cuda.is_available() and not flow.cuda.is_available():
        assert flow.cuda.is_initialized() is torch.cuda.is_initialized() is False
        assert flow.cuda.is_bf16_supported() is False
        assert flow.accelerator.current_accelerator() is None
        assert flow.accelerator.device_count() == 0
        with pytest.raises(RuntimeError, match=r"\[cuda\] cuda:0 is not available"):
            flow.cuda.set_device(0)
    with flow.cuda.amp.autocast(enabled=False):
        pass
    assert flow.cuda.amp.GradScaler is flow.amp.GradScaler


def test_tensor_device_flags_for_devices_this_build_never_makes():
    t = flow.ones(2)
    for flag in ("is_xpu", "is_mps", "is_quantized", "is_sparse", "is_nested", "is_mkldnn"):
        assert getattr(t, flag) is False and getattr(torch.ones(2), flag) is False, flag


def test_rng_state_round_trips_and_fork_rng_restores_it():
    flow.manual_seed(3)
    state = flow.get_rng_state()
    assert state.dtype == flow.uint8 and tuple(state.shape) == (16,)
    first = flow.rand(3).tolist()
    flow.set_rng_state(state)
    assert flow.rand(3).tolist() == first
    with flow.random.fork_rng():
        flow.rand(5)
    after = flow.rand(2).tolist()
    flow.set_rng_state(state)
    flow.rand(3)
    assert flow.rand(2).tolist() == after
    assert flow.initial_seed() == 3
    with pytest.raises(ValueError, match=r"\[set_rng_state\] expects the 16-byte state"):
        flow.set_rng_state(flow.zeros(3, dtype=flow.uint8))


def test_float32_matmul_precision_is_the_tf32_switch():
    assert flow.get_float32_matmul_precision() == "highest"
    try:
        flow.set_float32_matmul_precision("high")
        assert flow.backends.cuda.matmul.allow_tf32 is True
    finally:
        flow.set_float32_matmul_precision("highest")
    with pytest.raises(ValueError, match="set_float32_matmul_precision"):
        flow.set_float32_matmul_precision("low")
