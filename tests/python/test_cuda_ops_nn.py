"""The GPU tier of the ops beyond the elementwise and transformer ones: convolution through
cuDNN, pooling, sort / topk, cumsum, multinomial, sample_tokens, masked and scatter ops, each with its gradient,
the norms' weight and bias gradients over many rows, and cuDNN's fused attention, on a GPU against
the same call on the CPU. Skips, saying why, where no GPU is visible."""

import numpy as np
import pytest

import oneflowlike as flow
import oneflowlike.nn.functional as F
from test_cuda import needs_gpu
from test_cuda_ops import _same

pytestmark = needs_gpu


def _grads_match(fn, *inputs, rtol=1e-5, atol=1e-5):
    """fn on the CPU and the GPU: equal outputs, and equal gradients of every floating input."""
    cpu = [x.clone().requires_grad_() if x.is_floating_point() else x for x in inputs]
    gpu = [x.cuda().requires_grad_() if x.is_floating_point() else x.cuda() for x in inputs]
    want, got = fn(*cpu), fn(*gpu)
    np.testing.assert_allclose(got.cpu().numpy(), want.detach().numpy(), rtol=rtol, atol=atol)
    g = flow.tensor(np.random.default_rng(1).uniform(-1, 1, tuple(want.shape)), dtype=want.dtype)
    want.backward(g)
    got.backward(g.cuda())
    for c, d in zip(cpu, gpu):
        if c.is_floating_point():
            np.testing.assert_allclose(d.grad.cpu().numpy(), c.grad.numpy(), rtol=rtol, atol=atol)


def _uniform(*shape, seed=0):
    return flow.tensor(np.random.default_rng(seed).uniform(-1, 1, shape), dtype=flow.float32)


@pytest.fixture(autouse=True)
def _no_tf32():
    flow.backends.cudnn.allow_tf32 = False  # float32 convolutions compared at float32 precision
    yield
    flow.backends.cudnn.allow_tf32 = True


@pytest.mark.parametrize("rows", [5, 4096], ids=str)
@pytest.mark.parametrize("rms", [False, True], ids=["layer_norm", "rms_norm"])
def test_norm_gradients_over_many_rows_equal_the_cpu(rows, rms):
    # Many rows: the weight's and bias's gradients sum row pieces on many blocks, then the pieces.
    x, w, b = _uniform(rows, 48), _uniform(48, seed=1), _uniform(48, seed=2)
    if rms:
        _grads_match(lambda x, w: F.rms_norm(x, (48,), w), x, w, rtol=1e-4, atol=1e-4)
    else:
        _grads_match(lambda x, w, b: F.layer_norm(x, (48,), w, b), x, w, b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "stride, padding, dilation, groups",
    [(1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 1), (1, 1, 1, 2), (2, 0, 1, 4)],
    ids=str,
)
def test_conv2d_through_cudnn_equals_the_cpu_with_its_gradients(stride, padding, dilation, groups):
    x, w, b = _uniform(2, 4, 9, 8), _uniform(8, 4 // groups, 3, 3, seed=1), _uniform(8, seed=2)
    _grads_match(
        lambda x, w, b: F.conv2d(x, w, b, stride, padding, dilation, groups), x, w, b, rtol=1e-4
    )


@pytest.mark.parametrize("dtype", [flow.float16, flow.bfloat16], ids=str)
def test_conv2d_in_16_bit_floats_is_close_to_float32(dtype):
    x, w = _uniform(2, 3, 8, 8), _uniform(4, 3, 3, 3, seed=1)
    got = F.conv2d(x.cuda().to(dtype), w.cuda().to(dtype), padding=1).float().cpu().numpy()
    np.testing.assert_allclose(got, F.conv2d(x, w, padding=1).numpy(), rtol=5e-2, atol=5e-2)


def test_tf32_convolution_is_close_to_float32():
    x, w = _uniform(2, 16, 8, 8), _uniform(16, 16, 3, 3, seed=1)
    flow.backends.cudnn.allow_tf32 = True
    got = F.conv2d(x.cuda(), w.cuda(), padding=1).cpu().numpy()
    np.testing.assert_allclose(got, F.conv2d(x, w, padding=1).numpy(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("kernel, stride, padding", [(2, 2, 0), (3, 1, 1), (3, 2, 1)], ids=str)
def test_pooling_equals_the_cpu_with_its_gradients(kernel, stride, padding):
    x = _uniform(2, 3, 7, 6)
    _grads_match(lambda x: F.max_pool2d(x, kernel, stride, padding), x)
    _grads_match(lambda x: F.avg_pool2d(x, kernel, stride, padding), x)
    _grads_match(lambda x: F.avg_pool2d(x, kernel, stride, padding, count_include_pad=False), x)


def test_max_pool_propagates_nan_as_the_cpu():
    x = _uniform(1, 1, 4, 4)
    x[0, 0, 1, 1] = float("nan")
    _same(F.max_pool2d(x.cuda(), 2), F.max_pool2d(x, 2), flow.float32)


def test_a_small_cnn_trains_on_the_gpu_like_on_the_cpu():
    def losses(device):
        flow.manual_seed(0)
        model = flow.nn.Sequential(
            flow.nn.Conv2d(3, 8, 3, padding=1),
            flow.nn.BatchNorm2d(8),
            flow.nn.ReLU(),
            flow.nn.MaxPool2d(2),
            flow.nn.Flatten(),
            flow.nn.Linear(8 * 4 * 4, 10),
        ).to(device)
        opt = flow.optim.SGD(model.parameters(), lr=0.1)
        x, y = _uniform(4, 3, 8, 8).to(device), flow.tensor([1, 3, 5, 7]).to(device)
        out = []
        for _ in range(3):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            out.append(float(loss.cpu().numpy()))
        return out

    np.testing.assert_allclose(losses("cuda"), losses("cpu"), rtol=1e-4)


@pytest.mark.parametrize("dtype", [flow.float32, flow.float16, flow.int64, flow.bool], ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_sort_argsort_and_topk_order_ties_and_nan_as_the_cpu(dtype, dim):
    x = flow.tensor(np.random.default_rng(0).integers(-3, 3, (5, 6, 7))).to(dtype)
    if dtype.is_floating_point:
        x[0, 0, 0], x[1, 2, 3], x[2, 1, 0] = float("nan"), -0.0, float("inf")
    for descending in (False, True):
        got, want = flow.sort(x.cuda(), dim, descending), flow.sort(x, dim, descending)
        _same(got[0], want[0], dtype)
        _same(got[1], want[1], flow.int64)  # stable: ties in index order on both devices
        _same(flow.argsort(x.cuda(), dim, descending), flow.argsort(x, dim, descending), dtype)
    if dtype != flow.bool:
        got, want = flow.topk(x.cuda(), 3, dim), flow.topk(x, 3, dim)
        _same(got[0], want[0], dtype)
        _same(got[1], want[1], flow.int64)


def test_sort_gradient_and_a_long_lane():
    _grads_match(lambda x: flow.sort(x, 1)[0], _uniform(3, 5000))
    _grads_match(lambda x: flow.topk(x, 4, 0)[0], _uniform(100, 3))


@pytest.mark.parametrize("dtype", [flow.float32, flow.float16, flow.int64, flow.bool], ids=str)
def test_cumsum_equals_the_cpu(dtype):
    x = flow.tensor(np.random.default_rng(0).integers(0, 3, (4, 300, 3))).to(dtype)
    for dim in (0, 1, -1):
        _same(flow.cumsum(x.cuda(), dim), flow.cumsum(x, dim), dtype)
    _grads_match(lambda x: flow.cumsum(x, 1), _uniform(3, 50))


@pytest.mark.parametrize("replacement", [True, False])
def test_a_seed_draws_the_same_multinomial_samples_on_the_gpu(replacement):
    p = flow.tensor(np.random.default_rng(0).uniform(0, 1, (6, 50)), dtype=flow.float32)
    p[0, :40] = 0

    def draw(device):
        flow.manual_seed(3)
        return flow.multinomial(p.to(device), 8, replacement=replacement).cpu().numpy()

    np.testing.assert_array_equal(draw("cuda"), draw("cpu"))


def test_sample_tokens_on_the_gpu_draws_the_cpus_tokens_and_raises_the_same():
    rng = np.random.default_rng(0)
    args = [
        rng.standard_normal((6, 50)).astype(np.float32), np.arange(6), np.full(6, 2),
        np.array([0.0, 0.7, 1.0, 1.3, 1.0, 1.0], np.float32), np.array([0, 0, 5, 0, 1, 3]),
        np.array([1.0, 1.0, 1.0, 0.8, 1.0, 0.5], np.float32),
    ]  # fmt: skip

    def draw(device):
        return flow.sample_tokens(*[flow.tensor(a).to(device) for a in args]).cpu().numpy()

    np.testing.assert_array_equal(draw("cuda"), draw("cpu"))
    args[3][2] = -1.0
    with pytest.raises(RuntimeError, match=r"\[sample_tokens\] row 2: temperature"):
        draw("cuda")


def test_multinomial_on_the_gpu_rejects_rows_that_are_no_distribution():
    bad = flow.tensor([[0.5, 0.5], [0.2, -1.0]]).cuda()
    with pytest.raises(RuntimeError, match=r"\[multinomial\] row 1 .* element < 0"):
        flow.multinomial(bad, 1)
    with pytest.raises(RuntimeError, match=r"\[multinomial\] row 0 has 1 categories"):
        flow.multinomial(flow.tensor([[1.0, 0.0]]).cuda(), 2)


@pytest.mark.parametrize("dtype", [flow.float32, flow.int8, flow.bool], ids=str)
def test_masked_select_scatter_and_fill_equal_the_cpu(dtype):
    r = np.random.default_rng(0)
    x = flow.tensor(r.integers(0, 5, (6, 7))).to(dtype)
    mask = flow.tensor(r.uniform(size=(6, 7)) < 0.4)
    _same(flow.masked_select(x.cuda(), mask.cuda()), flow.masked_select(x, mask), dtype)
    _same(flow.masked_select(x.cuda(), mask[0].cuda()), flow.masked_select(x, mask[0]), dtype)
    src = flow.tensor(r.integers(0, 5, (50,))).to(dtype)
    want = x.masked_scatter(mask, src)
    _same(x.cuda().masked_scatter(mask.cuda(), src.cuda()), want, dtype)
    _same(x.cuda().masked_fill(mask.cuda(), 1), x.masked_fill(mask, 1), dtype)


def test_masked_scatter_with_too_short_a_source_raises_on_the_gpu():
    mask = flow.ones(4, dtype=flow.bool).cuda()
    with pytest.raises(RuntimeError, match=r"\[masked_scatter\] .* selects 4 .* has only 3"):
        flow.zeros(4).cuda().masked_scatter(mask, flow.ones(3).cuda())


def test_masked_gradients_on_the_gpu():
    mask = flow.tensor(np.random.default_rng(0).uniform(size=(5, 4)) < 0.5)
    _grads_match(lambda x: flow.masked_select(x, mask.to(x.device)), _uniform(5, 4))
    _grads_match(
        lambda x, s: x.masked_scatter(mask.to(x.device), s), _uniform(5, 4), _uniform(20, seed=1)
    )


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_lets_the_last_of_repeated_indices_win_as_the_cpu(dim):
    r = np.random.default_rng(0)
    x = _uniform(4, 5, 6)
    index = flow.tensor(r.integers(0, 2, (3, 4, 5)), dtype=flow.int64)  # many repeats
    src = _uniform(3, 4, 5, seed=1)
    _same(
        flow.scatter(x.cuda(), dim, index.cuda(), src.cuda()),
        flow.scatter(x, dim, index, src),
        flow.float32,
    )


def _heads(seed, b=2, length=64, h=4, d=64, dtype=flow.float32):
    # As a projection's heads: (B, L, H, D) transposed to (B, H, L, D), not contiguous.
    x = np.random.default_rng(seed).standard_normal((b, length, h, d))
    return flow.tensor(x, dtype=dtype).transpose(1, 2)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", [flow.float16, flow.bfloat16], ids=str)
@pytest.mark.parametrize("keys", [64, 96], ids=str)
def test_flash_attention_through_cudnn_is_close_to_the_cpu_with_its_gradients(dtype, causal, keys):
    q, k, v = _heads(0), _heads(1, length=keys), _heads(2, length=keys)
    cpu = [t.clone().requires_grad_() for t in (q, k, v)]
    gpu = [t.to("cuda", dtype).requires_grad_() for t in (q, k, v)]
    want = flow._C.flash_attention(*cpu, 0.125, causal)
    got = flow._C.flash_attention(*gpu, 0.125, causal)
    assert got.dtype == dtype and got.device == flow.device("cuda:0")
    tol = 1e-2 if dtype == flow.float16 else 4e-2
    np.testing.assert_allclose(got.float().cpu().numpy(), want.detach().numpy(), rtol=tol, atol=tol)
    g = flow.tensor(np.random.default_rng(3).uniform(-1, 1, tuple(want.shape)), dtype=flow.float32)
    want.backward(g)
    got.backward(g.to("cuda", dtype))
    for c, d in zip(cpu, gpu):
        np.testing.assert_allclose(
            d.grad.float().cpu().numpy(), c.grad.numpy(), rtol=4 * tol, atol=4 * tol
        )


def test_attention_under_bf16_autocast_on_cuda_is_the_fused_kernel():
    q, k, v = (_heads(s).cuda() for s in range(3))
    with flow.autocast("cuda", dtype=flow.bfloat16):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    fused = flow._C.flash_attention(
        *(t.to(flow.bfloat16) for t in (q, k, v)), 1 / np.sqrt(64), True
    )
    assert out.dtype == flow.bfloat16
    np.testing.assert_array_equal(out.float().cpu().numpy(), fused.float().cpu().numpy())
    flow.backends.cuda.enable_flash_sdp(False)  # as its parts: close, not equal
    try:
        with flow.autocast("cuda", dtype=flow.bfloat16):
            parts = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    finally:
        flow.backends.cuda.enable_flash_sdp(True)
    np.testing.assert_allclose(
        parts.float().cpu().numpy(), out.float().cpu().numpy(), rtol=4e-2, atol=4e-2
    )


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
@pytest.mark.parametrize("dtype", [flow.float32, flow.float64])
def test_fused_recurrent_layers_equal_the_cpu_with_their_gradients(cls, dtype):
    # _lstm_layer / _gru_layer: cuBLAS per step and the CUDA cell kernels, both directions (TF32
    # matmuls are off by default)
    flow.manual_seed(0)
    cpu = getattr(flow.nn, cls)(6, 8, num_layers=2, bidirectional=True).to(dtype)
    gpu = getattr(flow.nn, cls)(6, 8, num_layers=2, bidirectional=True).to(dtype)
    gpu.load_state_dict(cpu.state_dict())
    gpu.cuda()
    x = flow.tensor(np.random.default_rng(2).uniform(-1, 1, (7, 3, 6)), dtype=dtype)
    tol = 1e-5 if dtype == flow.float32 else 1e-10

    def run(model, inp):
        out, state = model(inp)
        state = state if isinstance(state, tuple) else (state,)
        (out.pow(2).sum() + sum((s * 1.5).sum() for s in state)).backward()
        return out

    want, got = run(cpu, x), run(gpu, x.cuda())
    np.testing.assert_allclose(
        got.detach().cpu().numpy(), want.detach().numpy(), rtol=tol, atol=tol
    )
    grads = dict(gpu.named_parameters())
    for name, p in cpu.named_parameters():
        np.testing.assert_allclose(
            grads[name].grad.cpu().numpy(), p.grad.numpy(), rtol=tol * 10, atol=tol * 10
        )
