"""The GPU tier of the ops: each op with a CUDA kernel, and its gradient, on a GPU against the
same call on the CPU, over test_ops_elementwise.py's cases (inputs broadcast and strided, every
float dtype). Skips, saying why, where no GPU is visible."""

import numpy as np
import pytest

import oneflowlike as flow
from test_cuda import needs_gpu
from test_ops_elementwise import BINARY, SHAPES, UNARY, _binary_inputs, _sample

pytestmark = needs_gpu
# (float16 and bfloat16 compute in float on both devices; the results round the same way but
# transcendental functions differ in the last float bits between the CPU and CUDA libraries.)
TOLERANCE = {flow.float32: 1e-5, flow.float64: 1e-12, flow.float16: 2e-3, flow.bfloat16: 1e-2}


def _same(gpu, cpu, dtype):
    assert gpu.device == flow.device("cuda:0") and gpu.dtype == cpu.dtype
    a, b = gpu.cpu().float().numpy(), cpu.float().numpy()
    np.testing.assert_allclose(a, b, rtol=TOLERANCE.get(dtype, 0), atol=TOLERANCE.get(dtype, 0))


@pytest.mark.parametrize("dtype", list(TOLERANCE), ids=str)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_on_the_gpu_equals_the_cpu_with_its_gradient(name, dtype):
    fn, _, domain = UNARY[name]
    x = flow.tensor(_sample(domain, (4, 6))).to(dtype)
    _same(fn(x.cuda()), fn(x), dtype)
    _same(fn(x.cuda().t()), fn(x.t()), dtype)  # strided input
    if dtype in (flow.float32, flow.float64):
        xc, xg = x.clone().requires_grad_(), x.cuda().requires_grad_()
        g = flow.tensor(_sample("any", (4, 6), seed=1)).to(dtype)
        fn(xc).backward(g)
        fn(xg).backward(g.cuda())
        _same(xg.grad, xc.grad, dtype)


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_on_the_gpu_broadcasts_like_the_cpu_with_its_gradients(name, shapes):
    fn, _, domain = BINARY[name]
    a, b = (flow.tensor(v, dtype=flow.float32) for v in _binary_inputs(domain, *shapes))
    _same(fn(a.cuda(), b.cuda()), fn(a, b), flow.float32)
    ac, bc = a.clone().requires_grad_(), b.clone().requires_grad_()
    ag, bg = a.cuda().requires_grad_(), b.cuda().requires_grad_()
    out = fn(ac, bc)
    g = flow.ones(*out.shape)
    out.backward(g)
    fn(ag, bg).backward(g.cuda())
    _same(ag.grad, ac.grad, flow.float32)
    _same(bg.grad, bc.grad, flow.float32)


@pytest.mark.parametrize(
    "dtype", [flow.int32, flow.int64, flow.uint8, flow.float16, flow.bool], ids=str
)
def test_comparisons_logic_and_where_on_every_dtype(dtype):
    r = np.random.default_rng(0)
    a = flow.tensor(r.integers(0, 4, (5, 3))).to(dtype)
    b = flow.tensor(r.integers(0, 4, (3,))).to(dtype)
    for fn in (flow.eq, flow.ne, flow.lt, flow.ge, flow.logical_and, flow.logical_xor):
        _same(fn(a.cuda(), b.cuda()), fn(a, b), dtype)
    _same(flow.logical_not(a.cuda()), flow.logical_not(a), dtype)
    cond = a > b
    _same(flow.where(cond.cuda(), a.cuda(), b.cuda()), flow.where(cond, a, b), dtype)
    if dtype != flow.bool:
        _same(a.cuda() // (b.cuda() + 1), a // (b + 1), dtype)
        _same(a.cuda() % (b.cuda() + 1), a % (b + 1), dtype)


MATMUL_SHAPES = [((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (4, 5)), ((4,), (4, 5))]


@pytest.mark.parametrize("dtype", list(TOLERANCE), ids=str)
@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul_through_cublas_equals_the_cpu_with_its_gradients(shapes, dtype):
    r = np.random.default_rng(0)
    a, b = (flow.tensor(r.uniform(-1, 1, s)).to(dtype) for s in shapes)
    tol = {flow.float16: 2e-2, flow.bfloat16: 5e-2}.get(dtype, TOLERANCE[dtype])
    got = flow.matmul(a.cuda(), b.cuda()).cpu().float().numpy()
    np.testing.assert_allclose(got, flow.matmul(a, b).float().numpy(), rtol=tol, atol=tol)
    if a.dim() == 2:  # transposed operands are read in place (column-major for cuBLAS)
        at, bt = a.t().contiguous(), b.t().contiguous()
        got = flow.matmul(at.cuda().t(), bt.cuda().t()).cpu().float().numpy()
        np.testing.assert_allclose(got, flow.matmul(a, b).float().numpy(), rtol=tol, atol=tol)
    if dtype == flow.float32:
        ac, bc = a.clone().requires_grad_(), b.clone().requires_grad_()
        ag, bg = a.cuda().requires_grad_(), b.cuda().requires_grad_()
        flow.matmul(ac, bc).backward(flow.ones(*flow.matmul(a, b).shape))
        flow.matmul(ag, bg).backward(flow.ones(*flow.matmul(a, b).shape, device="cuda"))
        _same(ag.grad, ac.grad, dtype)
        _same(bg.grad, bc.grad, dtype)


@pytest.mark.parametrize("dtype", [flow.float32, flow.float16, flow.int64, flow.bool], ids=str)
@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 2)], ids=str)
def test_reductions_on_the_gpu_equal_the_cpu(dtype, dim):
    r = np.random.default_rng(0)
    x = flow.tensor(r.integers(-3, 4, (3, 70, 5))).to(dtype)
    kw = {} if dim is None else {"dim": dim}
    fns = [flow.any, flow.all] if dtype == flow.bool else [flow.sum, flow.amax, flow.amin]
    if dtype == flow.float32:
        fns += [
            flow.mean,
            lambda t, **k: (
                flow.prod(t / 3 + 1, **k)
                if "dim" in k and isinstance(k["dim"], int)
                else flow.sum(t, **k)
            ),
        ]
    for fn in fns:
        _same(fn(x.cuda(), **kw), fn(x, **kw), dtype)


@pytest.mark.parametrize("dtype", [flow.float32, flow.float16, flow.int64, flow.bool], ids=str)
@pytest.mark.parametrize("dim", [None, 1, (0, 1)], ids=str)
def test_long_reductions_split_over_blocks_equal_the_cpu(dtype, dim):
    # Few outputs over a long axis: the kernels cut the axis into pieces over many blocks and
    # reduce the pieces in a second pass. Small integers keep float sums exact in any order.
    r = np.random.default_rng(1)
    x = flow.tensor(r.integers(-3, 4, (3, 70000, 5))).to(dtype)
    kw = {} if dim is None else {"dim": dim}
    fns = [flow.any, flow.all] if dtype == flow.bool else [flow.sum, flow.amax, flow.amin]
    for fn in fns + ([flow.mean] if dtype == flow.float32 else []):
        _same(fn(x.cuda(), **kw), fn(x, **kw), dtype)


def _gpt_losses(device, steps=3, graph=False):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from examples.char_gpt.model import GPT, GPTConfig
    from examples.parallel.gpt_layouts import TrainStep

    flow.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=17, block_size=8, n_layer=2, n_head=2, n_embd=16))
    model.to(device)
    opt = flow.optim.AdamW(model.parameters(), lr=1e-2)
    r = np.random.default_rng(0)
    batches = [
        [flow.tensor(r.integers(0, 17, (4, 8))).to(device) for _ in range(2)] for _ in range(steps)
    ]

    step = TrainStep(model, opt) if graph else None
    losses = []
    for x, y in batches:
        if graph:
            loss = step(x, y)
        else:
            _, loss = model(x, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        losses.append(float(loss.cpu().numpy()))
    return losses, {n: p.cpu().numpy() for n, p in model.named_parameters()}


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
def test_the_example_gpt_trains_on_the_gpu_like_on_the_cpu(graph):
    want_losses, want_params = _gpt_losses("cpu", graph=graph)
    got_losses, got_params = _gpt_losses("cuda", graph=graph)
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-4)
    for name, value in want_params.items():
        np.testing.assert_allclose(got_params[name], value, rtol=1e-3, atol=1e-4, err_msg=name)


@pytest.mark.parametrize(
    "dtype", [flow.float32, flow.float16, flow.bfloat16, flow.float64], ids=str
)
def test_a_seed_draws_the_same_values_on_the_gpu_as_on_the_cpu(dtype):
    def draw(device):
        flow.manual_seed(7)
        return [
            flow.rand(3, 5, dtype=dtype, device=device),
            flow.randn(1000, dtype=dtype, device=device),
            flow.randint(0, 9, (4, 4), device=device),
        ]

    for got, want in zip(draw("cuda"), draw("cpu")):
        # normals go through CUDA's log and cos: within an ulp of the host's in double
        tol = 1e-12 if dtype == flow.float64 else TOLERANCE[dtype]
        np.testing.assert_allclose(
            got.cpu().float().numpy(), want.float().numpy(), rtol=tol, atol=tol
        )


@pytest.mark.parametrize("dtype", [flow.float32, flow.float16, flow.int64], ids=str)
def test_arg_reductions_and_triangles_on_the_gpu_equal_the_cpu(dtype):
    r = np.random.default_rng(0)
    x = flow.tensor(r.integers(-9, 9, (4, 6, 5))).to(dtype)
    for dim in (0, 1, -1):
        _same(flow.argmax(x.cuda(), dim=dim), flow.argmax(x, dim=dim), dtype)
        _same(flow.argmin(x.cuda(), dim=dim), flow.argmin(x, dim=dim), dtype)
        got, want = flow.max(x.cuda(), dim=dim), flow.max(x, dim=dim)
        _same(got[0], want[0], dtype)
        _same(got[1], want[1], dtype)
    for diagonal in (-1, 0, 2):
        _same(flow.tril(x.cuda(), diagonal), flow.tril(x, diagonal), dtype)
        _same(flow.triu(x.cuda(), diagonal), flow.triu(x, diagonal), dtype)


def test_tf32_matmul_is_close_to_float32():
    r = np.random.default_rng(0)
    a, b = (flow.tensor(r.uniform(-1, 1, (64, 64)), dtype=flow.float32) for _ in range(2))
    try:
        flow.backends.cuda.matmul.allow_tf32 = True
        got = flow.matmul(a.cuda(), b.cuda()).cpu().numpy()
    finally:
        flow.backends.cuda.matmul.allow_tf32 = False
    np.testing.assert_allclose(got, (a @ b).numpy(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_and_its_scatter_add_gradient_on_the_gpu(dim):
    r = np.random.default_rng(0)
    x = flow.tensor(r.uniform(-1, 1, (4, 5, 6)), dtype=flow.float32)
    index = flow.tensor(r.integers(0, x.shape[dim], (3, 4, 5)), dtype=flow.int64)
    xc, xg = x.clone().requires_grad_(), x.cuda().requires_grad_()
    want, got = flow.gather(xc, dim, index), flow.gather(xg, dim, index.cuda())
    _same(got, want, flow.float32)
    g = flow.tensor(r.uniform(-1, 1, tuple(want.shape)), dtype=flow.float32)
    want.backward(g)
    got.backward(g.cuda())  # scatter_add, repeated indices adding up
    _same(xg.grad, xc.grad, flow.float32)
