"""Mixed precision: flow.autocast casts the inputs of the ops that declare a policy (matmul and
conv2d to the low precision, softmax and the norms up to float32) on its device only, gradients
reach float32 parameters in float32, and GradScaler skips steps whose gradients overflow. On
"cpu" these run here; the "cuda" policy is the same code on CUDA tensors."""

import sys
from pathlib import Path

import numpy as np
import pytest

import oneflowlike as flow

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from examples.char_gpt.model import GPT, GPTConfig  # noqa: E402
from test_cuda import needs_gpu  # noqa: E402

try:  # at import: torch's own import starts a process, which a unit test may not
    import torch
except ImportError:
    torch = None


@pytest.mark.parametrize("dtype", [flow.bfloat16, flow.float16], ids=str)
def test_ops_take_their_autocast_dtypes_and_gradients_come_back_in_float32(dtype):
    a = flow.randn(4, 8, requires_grad=True)
    b = flow.randn(8, 3, requires_grad=True)
    with flow.autocast("cpu", dtype=dtype):
        y = a @ b
        s = flow.softmax(y, -1)
        n = flow.nn.functional.layer_norm(y, (3,))
        kept = a + 1  # no policy: as given
    assert y.dtype == dtype and s.dtype == flow.float32 and n.dtype == flow.float32
    assert kept.dtype == flow.float32
    (s * n).sum().backward()
    assert a.grad.dtype == flow.float32 and b.grad.dtype == flow.float32
    assert (a @ b).dtype == flow.float32  # outside the context


@pytest.mark.parametrize("dtype", [flow.bfloat16, flow.float16], ids=str)
def test_pytorchs_float32_list_runs_in_float32(dtype):
    x = flow.rand(3, 4).to(dtype) + 0.5  # low-precision activations, as a matmul leaves them
    target = flow.tensor([0, 1, 3])
    with flow.autocast("cpu", dtype=dtype):
        ups = {
            "exp": flow.exp(x),
            "log": flow.log(x),
            "log1p": flow.log1p(x),
            "expm1": flow.expm1(x),
            "rsqrt": flow.rsqrt(x),
            "reciprocal": flow.reciprocal(x),
            "pow": flow.pow(x, 2.0),
            "pow tensor": flow.pow(x, x),
            "sum": x.sum(),
            "prod": x.prod(),
            "cumsum": flow.cumsum(x, 1),
            "nll_loss": flow.nn.functional.nll_loss(x, target),
            "cross_entropy": flow.nn.functional.cross_entropy(x, target),
        }
        kept = {"relu": flow.relu(x), "add": x + x, "max": x.max()}
    for name, y in ups.items():
        assert y.dtype == flow.float32, name
    for name, y in kept.items():
        assert y.dtype == dtype, name


def test_autocast_leaves_other_devices_alone_nests_and_decorates():
    a, b = flow.randn(2, 2), flow.randn(2, 2)
    with flow.autocast("cuda", dtype=flow.bfloat16):
        assert (a @ b).dtype == flow.float32  # cpu tensors
        with flow.autocast("cpu", dtype=flow.bfloat16):
            assert (a @ b).dtype == flow.bfloat16
            with flow.autocast("cpu", enabled=False):
                assert (a @ b).dtype == flow.float32
            assert (a @ b).dtype == flow.bfloat16
        assert (a @ b).dtype == flow.float32

    @flow.autocast("cpu", dtype=flow.bfloat16)
    def product(x, y):
        return x @ y

    assert product(a, b).dtype == flow.bfloat16 and (a @ b).dtype == flow.float32
    with pytest.raises(ValueError, match="float16 or bfloat16"):
        flow.autocast("cpu", dtype=flow.float64)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=needs_gpu)])
def test_the_gpt_trains_under_bf16_autocast_close_to_float32(device):
    # On CUDA its attention (head dim 8) runs as cuDNN's fused flash attention in bfloat16.
    def losses(autocast):
        flow.manual_seed(0)
        model = GPT(GPTConfig(vocab_size=17, block_size=8, n_layer=2, n_head=2, n_embd=16))
        model.to(device)
        opt = flow.optim.AdamW(model.parameters(), lr=1e-2)
        r = np.random.default_rng(0)
        out = []
        for _ in range(5):
            x, y = (flow.tensor(r.integers(0, 17, (4, 8))).to(device) for _ in range(2))
            with flow.autocast(device, dtype=flow.bfloat16, enabled=autocast):
                _, loss = model(x, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            out.append(float(loss.cpu().numpy()))
        assert all(p.dtype == flow.float32 for p in model.parameters())
        return out

    full, mixed = losses(False), losses(True)
    assert mixed[-1] < mixed[0]  # it learns
    np.testing.assert_allclose(mixed, full, rtol=3e-2)


def test_grad_scaler_unscales_and_skips_overflowing_steps():
    w = flow.nn.Parameter(flow.ones(3))
    opt = flow.optim.SGD([w], lr=0.1)
    scaler = flow.amp.GradScaler(init_scale=8.0, growth_interval=2)
    scaler.scale((w * 2).sum()).backward()
    assert np.allclose(w.grad.numpy(), 16.0)
    scaler.step(opt)  # unscaled: gradient 2, step 0.2
    scaler.update()
    np.testing.assert_allclose(w.numpy(), 0.8)
    opt.zero_grad()
    scaler.scale((w * float("inf")).sum()).backward()
    scaler.step(opt)  # skipped
    scaler.update()
    np.testing.assert_allclose(w.numpy(), 0.8)
    assert scaler.get_scale() == 4.0
    for _ in range(2):
        opt.zero_grad()
        scaler.scale(w.sum()).backward()
        scaler.step(opt)
        scaler.update()
    assert scaler.get_scale() == 8.0  # grown after two clean steps


def test_linear_under_autocast_is_in_the_low_precision_dtype_as_pytorchs():
    """The bias joins the low-precision product instead of promoting it back to float32 (a
    Linear with out_features 1 after a bf16 activation came out float32)."""
    if torch is None:
        pytest.skip("needs PyTorch")
    for width in (1, 8):
        lin, ref = flow.nn.Linear(8, width), torch.nn.Linear(8, width)
        for x, t in ((flow.randn(2, 8), torch.randn(2, 8)),
                     (flow.randn(2, 8).bfloat16(), torch.randn(2, 8).bfloat16())):  # fmt: skip
            with flow.autocast("cpu"), torch.autocast("cpu"):
                assert repr(lin(x).dtype).split(".")[-1] == str(ref(t).dtype).split(".")[-1]
    lin = flow.nn.Linear(3, 2)
    assert lin(flow.randn(4, 3)).dtype == flow.float32  # no autocast: as before
