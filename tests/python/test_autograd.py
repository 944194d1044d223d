"""Autograd engine behaviour: gradient arguments, accumulation, retain_graph, no_grad,
detach, autograd.grad and retain_grad."""

import numpy as np
import pytest

import oneflowlike as flow
from _check import assert_close, check_grad, rng, tensor, to_numpy


def _leaf(x, dtype=flow.float64):
    return tensor(np.asarray(x, dtype=np.float64), dtype=dtype, requires_grad=True)


def test_backward_with_gradient_for_non_scalar_output():
    x = rng().randn(2, 3)
    g = rng(1).randn(2, 3)
    t = _leaf(x)
    (t * t).backward(tensor(g))
    assert_close(t.grad, 2 * x * g)
    t2 = _leaf(x)
    (t2 * 3).backward(gradient=tensor(g))
    assert_close(t2.grad, 3 * g)


def test_backward_gradient_with_wrong_shape_raises():
    t = _leaf(np.ones(3))
    with pytest.raises(RuntimeError, match=r"\[backward\].*\(2,\).*\(3,\)"):
        (t * 2).backward(flow.ones(2, dtype=flow.float64))


def test_backward_of_non_scalar_without_gradient_raises():
    t = _leaf(np.ones((2, 2)))
    with pytest.raises(RuntimeError, match=r"\[backward\].*scalar.*\(2, 2\)"):
        (t * 2).backward()


def test_backward_of_one_element_tensor_needs_no_gradient():
    t = _leaf(np.ones((1, 1)) * 3)
    (t * t).backward()
    assert_close(t.grad, np.array([[6.0]]))


def test_gradients_accumulate_over_backward_calls():
    x = rng().randn(3)
    t = _leaf(x)
    (t * t).sum().backward()
    (t * t).sum().backward()
    assert_close(t.grad, 4 * x)
    (t.sum() * 0.5).backward()
    assert_close(t.grad, 4 * x + 0.5)
    t.grad = None
    (t * 3).sum().backward()
    assert_close(t.grad, np.full(3, 3.0))


def test_grad_does_not_alias_the_gradient_argument():
    t = _leaf(np.zeros(3))
    g = tensor(np.ones(3))
    t.clone().backward(g)
    g.add_(5.0)
    assert_close(t.grad, np.ones(3))
    assert_close(g, np.full(3, 6.0))


def test_the_gradient_argument_flows_uncopied_and_what_keeps_it_owns_a_copy():
    # As PyTorch: backward(g) starts from g itself (a hook on the root sees its memory); a
    # leaf's .grad, a retained .grad and autograd.grad's result, where g reaches them unchanged,
    # are copies the caller's later writes to g do not touch.
    x = _leaf(np.zeros(3))
    y = x.clone()
    y.retain_grad()
    g = tensor(np.ones(3))
    seen = []
    y.register_hook(lambda grad: seen.append(grad.data_ptr()))
    y.backward(g)
    assert seen == [g.data_ptr()]
    (z,) = flow.autograd.grad(x, [x], g)
    g.add_(5.0)
    for kept in (x.grad, y.grad, z):
        assert_close(kept, np.ones(3))


def test_leaves_given_one_gradient_own_separate_buffers():
    # add's backward hands one tensor to both inputs: each leaf's .grad must own its memory.
    a, b = _leaf(np.ones(3)), _leaf(np.ones(3))
    (a + b).sum().backward()
    a.grad.mul_(5.0)
    assert_close(a.grad, np.full(3, 5.0))
    assert_close(b.grad, np.ones(3))


def test_clip_grad_norm_of_leaves_given_one_gradient_scales_each_once():
    a, b = _leaf([1.0, 2.0]), _leaf([3.0, 4.0])
    (a + b).sum().backward()
    total = flow.nn.utils.clip_grad_norm_([a, b], 0.5)
    assert_close(total, 2.0)
    assert_close(a.grad, np.full(2, 0.25), rtol=1e-6)
    assert_close(b.grad, np.full(2, 0.25), rtol=1e-6)


def test_retained_gradients_given_one_gradient_own_separate_buffers():
    x = _leaf(np.ones(2))
    y = x * 2
    z = y + 0
    y.retain_grad()
    z.retain_grad()
    z.sum().backward()
    y.grad.mul_(3.0)
    assert_close(z.grad, np.ones(2))
    assert_close(x.grad, np.full(2, 2.0))


def test_gradient_of_a_variable_used_twice_adds_up():
    x = rng().randn(3)
    check_grad(lambda a: a * a.sin() + a.exp() * a, [x])
    t = _leaf(x)
    y = t * 2
    (y + y * y).sum().backward()
    assert_close(t.grad, 2 + 8 * x)


def test_retain_graph_allows_a_second_backward():
    t = _leaf([1.0, 2.0])
    y = (t.exp() * t).sum()
    y.backward(retain_graph=True)
    first = to_numpy(t.grad).copy()
    y.backward()
    assert_close(t.grad, 2 * first)


def test_second_backward_without_retain_graph_raises():
    t = _leaf([1.0, 2.0])
    y = (t.exp() * t).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=r"second time.*retain_graph"):
        y.backward()


def test_backward_on_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match=r"\[backward\].*does not require grad"):
        flow.ones(2).sum().backward()


# ---- grad mode ---------------------------------------------------------------------------


def test_no_grad_context_and_decorator():
    t = _leaf([1.0, 2.0])
    with flow.no_grad():
        assert not flow.is_grad_enabled()
        y = t * 2
        with flow.enable_grad():
            z = t * 3
    assert flow.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf
    assert z.requires_grad

    @flow.no_grad()
    def f(a):
        return a * 2

    assert not f(t).requires_grad
    assert flow.is_grad_enabled()


def test_set_grad_enabled():
    t = _leaf([1.0])
    with flow.set_grad_enabled(False):
        assert not (t * 2).requires_grad
    assert (t * 2).requires_grad
    flow.set_grad_enabled(False)
    try:
        assert not (t * 2).requires_grad
    finally:
        flow.set_grad_enabled(True)
    assert flow.is_grad_enabled()


def test_no_grad_restores_mode_after_an_exception():
    with pytest.raises(RuntimeError):
        with flow.no_grad():
            flow.ones(2) + flow.ones(3)
    assert flow.is_grad_enabled()


# ---- detach / requires_grad ---------------------------------------------------------------


def test_detach_shares_memory_and_stops_gradients():
    t = _leaf([1.0, 2.0])
    y = t * 2
    d = y.detach()
    assert not d.requires_grad and d.is_leaf
    with flow.no_grad():
        d.add_(1.0)
    assert_close(y, np.array([3.0, 5.0]))
    (t * d).sum().backward()
    assert_close(t.grad, np.array([3.0, 5.0]))
    assert not t.data.requires_grad
    assert not flow.detach(y).requires_grad


def test_detach_in_place():
    t = _leaf([1.0])
    y = t * 2
    y.detach_()
    assert not y.requires_grad and y.grad_fn is None


def test_requires_grad_propagation_and_leaf_flags():
    a = _leaf([1.0])
    b = tensor([2.0], dtype=flow.float64)
    c = a * b
    assert c.requires_grad and not c.is_leaf and c.grad_fn is not None
    assert "mul" in repr(c.grad_fn).lower()
    assert not (b * 2).requires_grad
    assert (b * 2).is_leaf
    b.requires_grad_()
    assert b.requires_grad
    with pytest.raises(TypeError, match="floating"):
        flow.ones(2, dtype=flow.int64).requires_grad_()
    with pytest.raises(RuntimeError, match="non-leaf"):
        c.requires_grad = False
    assert (a > 0).requires_grad is False
    assert not a.argmax().requires_grad


def test_grad_fn_next_functions_form_a_graph():
    a = _leaf([1.0])
    y = (a * 2).exp()
    ((fn, _),) = y.grad_fn.next_functions
    assert fn is not None
    assert "mul" in fn.name().lower()


# ---- autograd.grad -----------------------------------------------------------------------


def test_autograd_grad_returns_gradients_without_touching_dot_grad():
    x = rng().randn(3)
    a, b = _leaf(x), _leaf(np.ones(3))
    y = (a * a * b).sum()
    ga, gb = flow.autograd.grad(y, [a, b])
    assert_close(ga, 2 * x)
    assert_close(gb, x * x)
    assert a.grad is None and b.grad is None


def test_autograd_grad_with_grad_outputs_and_tuple_inputs():
    a = _leaf([1.0, 2.0])
    y = a * 3
    (g,) = flow.autograd.grad([y], (a,), grad_outputs=[tensor([1.0, 10.0], dtype=flow.float64)])
    assert_close(g, np.array([3.0, 30.0]))


def test_autograd_grad_allow_unused():
    a, b = _leaf([1.0]), _leaf([2.0])
    y = (a * 2).sum()
    with pytest.raises(RuntimeError, match=r"\[autograd.grad\].*allow_unused"):
        flow.autograd.grad(y, [a, b], retain_graph=True)
    ga, gb = flow.autograd.grad(y, [a, b], allow_unused=True)
    assert_close(ga, np.array([2.0]))
    assert gb is None


def test_autograd_grad_of_non_leaf_and_input_without_grad():
    a = _leaf([1.0, 2.0])
    h = a * 2
    y = (h * h).sum()
    (gh,) = flow.autograd.grad(y, h)
    assert_close(gh, np.array([4.0, 8.0]))
    with pytest.raises(RuntimeError, match=r"\[autograd.grad\].*does not require grad"):
        flow.autograd.grad((a * 2).sum(), flow.ones(2))


def test_create_graph_gives_second_derivatives():
    x = np.array([0.5, -1.0, 2.0])
    a = _leaf(x)
    (g,) = flow.autograd.grad((a**3).sum(), a, create_graph=True)
    assert g.requires_grad
    assert_close(g, 3 * x**2)
    (g2,) = flow.autograd.grad(g.sum(), a)
    assert_close(g2, 6 * x)
    b = _leaf(x)
    (b.sin().sum()).backward(create_graph=True)
    gb = b.grad
    assert gb.requires_grad
    (gb2,) = flow.autograd.grad(gb.sum(), b)
    assert_close(gb2, -np.sin(x))


def test_autograd_backward_over_several_roots():
    a = _leaf([1.0, 2.0])
    y1, y2 = (a * 2).sum(), (a * a).sum()
    flow.autograd.backward([y1, y2])
    assert_close(a.grad, np.array([4.0, 6.0]))
    b = _leaf([1.0])
    flow.autograd.backward(b * 5, grad_tensors=tensor([2.0], dtype=flow.float64))
    assert_close(b.grad, np.array([10.0]))


# ---- retain_grad ---------------------------------------------------------------------------


def test_retain_grad_keeps_gradients_of_non_leaves():
    a = _leaf([1.0, 2.0])
    h = a * 3
    h.retain_grad()
    k = a * 4
    assert h.retains_grad and not k.retains_grad
    (h * h + k).sum().backward()
    assert_close(h.grad, 2 * np.array([3.0, 6.0]))
    assert k.grad is None
    assert_close(a.grad, 2 * 9 * np.array([1.0, 2.0]) + 4)


def test_retain_grad_accumulates_over_backward_calls():
    a = _leaf([1.0])
    h = a * 2
    h.retain_grad()
    y = (h * h).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert_close(h.grad, np.array([8.0]))


# ---- dtypes, views, broadcasting ---------------------------------------------------------


@pytest.mark.parametrize(
    "dtype", [flow.float32, flow.float64, flow.float16, flow.bfloat16], ids=str
)
def test_gradient_dtype_matches_the_leaf(dtype):
    a = tensor(rng().randn(4), dtype=dtype, requires_grad=True)
    (a * a).sum().backward()
    assert a.grad.dtype == dtype
    tol = 1e-5 if dtype in (flow.float32, flow.float64) else 3e-2
    assert_close(a.grad, 2 * to_numpy(a).astype(np.float64), rtol=tol, atol=tol)


def test_gradient_through_views_of_a_leaf():
    x = rng().randn(3, 4)
    check_grad(lambda a: a.t()[1:, ::2].reshape(-1) * a.view(12)[:6], [x])


def test_grad_of_broadcast_leaf_is_reduced_to_its_shape():
    a = _leaf(np.ones((1, 3)))
    b = _leaf(np.ones((2, 1)))
    (a * b * 2).sum().backward()
    assert_close(a.grad, np.full((1, 3), 4.0))
    assert_close(b.grad, np.full((2, 1), 6.0))


def test_zero_size_backward():
    a = _leaf(np.zeros((0, 3)))
    (a * 2).sum().backward()
    assert tuple(a.grad.shape) == (0, 3)


# ---- every differentiable op over layouts and degenerate shapes ---------------------------

F = flow.nn.functional
_C4 = rng(9).uniform(0.5, 1.5, size=(4,))  # a second operand that broadcasts over rows
_IDX4 = np.array([3, 0, 3])
_T3 = np.array([1, 0, 3])


def _c():
    return tensor(_C4)


def _rows_target(x):
    return flow.tensor(np.resize(_T3, x.shape[0]))


# name -> (fn of a (rows, 4) tensor, input domain)
GRAD_OPS = {
    "neg": (flow.neg, "any"),
    "abs": (flow.abs, "nonzero"),
    "exp": (flow.exp, "any"),
    "log": (flow.log, "positive"),
    "sqrt": (flow.sqrt, "positive"),
    "rsqrt": (flow.rsqrt, "positive"),
    "sin": (flow.sin, "any"),
    "cos": (flow.cos, "any"),
    "tanh": (flow.tanh, "any"),
    "sigmoid": (flow.sigmoid, "any"),
    "relu": (flow.relu, "nonzero"),
    "gelu": (flow.gelu, "any"),
    "gelu_tanh": (lambda x: flow.gelu(x, approximate="tanh"), "any"),
    "silu": (flow.silu, "any"),
    "pow_scalar": (lambda x: x**2.5, "positive"),
    "clamp": (lambda x: x.clamp(-0.5, 0.5), "nonzero"),
    "square": (flow.square, "any"),
    "reciprocal": (flow.reciprocal, "positive"),
    "log1p": (flow.log1p, "positive"),
    "expm1": (flow.expm1, "any"),
    "erf": (flow.erf, "any"),
    "add": (lambda x: x + _c(), "any"),
    "radd": (lambda x: _c() + x, "any"),
    "sub": (lambda x: x - _c(), "any"),
    "rsub": (lambda x: _c() - x, "any"),
    "mul": (lambda x: x * _c(), "any"),
    "div": (lambda x: x / _c(), "any"),
    "rdiv": (lambda x: _c() / x, "positive"),
    "pow": (lambda x: x ** _c(), "positive"),
    "rpow": (lambda x: _c() ** x, "any"),
    "maximum": (lambda x: flow.maximum(x, _c()), "any"),
    "minimum": (lambda x: flow.minimum(_c(), x), "any"),
    "where": (lambda x: flow.where(x > 0, x * 2, _c()), "nonzero"),
    "masked_fill": (lambda x: x.masked_fill(x < 0, 1.0), "nonzero"),
    "sum": (lambda x: x.sum(1), "any"),
    "sum_all": (lambda x: x.sum(), "any"),
    "mean": (lambda x: x.mean(-1, keepdim=True), "any"),
    "prod": (lambda x: x.prod(1), "nonzero"),
    "amax": (lambda x: x.amax(1), "any"),
    "amin": (lambda x: flow.amin(x, -1, True), "any"),
    "max_dim": (lambda x: x.max(1).values, "any"),
    "min_dim": (lambda x: x.min(1, keepdim=True)[0], "any"),
    "var": (lambda x: x.var(1), "any"),
    "std": (lambda x: x.std(1, unbiased=False), "any"),
    "logsumexp": (lambda x: x.logsumexp(1), "any"),
    "matmul": (lambda x: x @ _c().to(x.dtype), "any"),  # matmul does not promote
    "matmul_self": (lambda x: x @ x.t(), "any"),
    "matmul_left": (lambda x: x.t() @ x, "any"),
    "linear": (
        lambda x: F.linear(
            x, tensor(np.outer(_C4[:3], _C4), dtype=x.dtype), tensor(_C4[:3], dtype=x.dtype)
        ),
        "any",
    ),
    "linear_batched": (  # the weight's gradient through matmul_sum
        lambda x: F.linear(flow.stack([x, 2 * x]), x[:2]),
        "any",
    ),
    "matmul_sum": (
        lambda x: flow._C.matmul_sum(flow.stack([x, x * x]), flow.stack([x.t(), x.t() + 1])),
        "any",
    ),
    "softmax": (lambda x: x.softmax(1), "any"),
    "softmax_dim0": (lambda x: F.softmax(x, dim=0), "any"),
    "log_softmax": (lambda x: F.log_softmax(x, dim=-1), "any"),
    "layer_norm": (lambda x: F.layer_norm(x, (4,), _c(), _c()), "any"),
    "rms_norm": (lambda x: F.rms_norm(x, (4,), _c()), "any"),
    "cross_entropy": (lambda x: F.cross_entropy(x, _rows_target(x), reduction="sum"), "any"),
    "cross_entropy_ls": (
        lambda x: F.cross_entropy(x, _rows_target(x), label_smoothing=0.1, reduction="sum"),
        "any",
    ),
    "nll_loss": (lambda x: F.nll_loss(x, _rows_target(x), reduction="sum"), "any"),
    "mse_loss": (lambda x: F.mse_loss(x, _c().expand_as(x), reduction="sum"), "any"),
    "sdpa": (lambda x: F.scaled_dot_product_attention(x, x * 0.5, x), "any"),
    "sdpa_causal": (lambda x: F.scaled_dot_product_attention(x, x, x, is_causal=True), "any"),
    "index_select": (lambda x: x.index_select(1, flow.tensor(_IDX4)), "any"),
    "gather": (lambda x: x.gather(1, flow.zeros(x.shape[0], 2, dtype=flow.int64) + 3), "any"),
    "scatter_add": (
        lambda x: flow.scatter_add(x, 1, flow.tensor(np.resize([[0, 0]], (x.shape[0], 2))), x),
        "any",
    ),
    "getitem": (lambda x: x[:, [2, 0, 2]].sum(1, keepdim=True) * x[..., None, 1:3], "any"),
    "cat": (lambda x: flow.cat([x, x * 2], 1), "any"),
    "stack": (lambda x: flow.stack([x, x.exp()], 0), "any"),
    "split": (lambda x: x.split(3, 1)[0] * x.split(3, 1)[1].sum(), "any"),
    "chunk": (lambda x: flow.chunk(x, 2, 1)[1], "any"),
    "view": (lambda x: x.contiguous().view(-1, 2), "any"),
    "reshape": (lambda x: x.reshape(2, -1), "any"),
    "transpose": (lambda x: x.transpose(0, 1) * _C4[:, None], "any"),
    "permute": (lambda x: x.unsqueeze(0).permute(2, 0, 1), "any"),
    "narrow": (lambda x: x.narrow(1, 1, 2), "any"),
    "expand": (lambda x: x.unsqueeze(0).expand(2, -1, -1), "any"),
    "squeeze": (lambda x: x[:, None, :1].squeeze(), "any"),
    "flatten": (lambda x: x.flatten(), "any"),
    "clone": (lambda x: x.clone() * 3, "any"),
}

_LAYOUTS = {
    # name -> (leaf shape for `rows` rows, view handed to the op)
    "contiguous": (lambda r: (r, 4), lambda t: t),
    "transposed": (lambda r: (4, r), lambda t: t.t()),
    "sliced": (lambda r: (r + 1, 8), lambda t: t[1:, 1::2]),
}


def _domain_sample(domain, shape, seed):
    r = rng(seed)
    if domain == "positive":
        return r.uniform(0.4, 2.0, size=shape)
    x = r.uniform(-2.0, 2.0, size=shape)
    if domain == "nonzero":
        x = np.where(np.abs(x) < 0.25, np.sign(x + 1e-9) * 0.25 + x, x)
        x = np.where(np.abs(np.abs(x) - 0.5) < 0.05, x * 1.3, x)  # away from clamp's kinks
    return x


@pytest.mark.parametrize("name", sorted(GRAD_OPS))
@pytest.mark.parametrize("layout", sorted(_LAYOUTS))
def test_every_op_backward_over_layouts(name, layout):
    fn, domain = GRAD_OPS[name]
    shape_of, view = _LAYOUTS[layout]
    check_grad(lambda t: fn(view(t)), [_domain_sample(domain, shape_of(3), seed=2)])


@pytest.mark.parametrize("name", sorted(GRAD_OPS))
def test_every_op_backward_with_non_contiguous_incoming_gradient(name):
    fn, domain = GRAD_OPS[name]

    def transposed_output(t):
        out = fn(t)
        return out.mT[..., ::2, :] if out.dim() >= 2 else out[::2] if out.dim() == 1 else out

    check_grad(transposed_output, [_domain_sample(domain, (3, 4), seed=6)])


@pytest.mark.parametrize("name", sorted(GRAD_OPS))
@pytest.mark.parametrize("rows", [0, 1])
def test_every_op_backward_on_zero_and_one_row(name, rows):
    fn, domain = GRAD_OPS[name]
    check_grad(fn, [_domain_sample(domain, (rows, 4), seed=3)])


@pytest.mark.parametrize("name", sorted(GRAD_OPS))
def test_every_op_backward_float32(name):
    fn, domain = GRAD_OPS[name]
    check_grad(
        fn,
        [_domain_sample(domain, (2, 4), seed=4)],
        dtype=flow.float32,
        eps=1e-3,
        rtol=5e-3,
        atol=5e-3,
    )


@pytest.mark.parametrize("name", sorted(GRAD_OPS))
@pytest.mark.parametrize("dtype", [flow.float16, flow.bfloat16], ids=str)
def test_every_op_low_precision_forward(name, dtype):
    fn, domain = GRAD_OPS[name]
    x = _domain_sample(domain, (2, 4), seed=5)
    low = tensor(x, dtype=dtype)
    out = fn(low)  # ops mixing in the float64 operand _c() promote; the rest keep dtype
    ref = to_numpy(fn(tensor(to_numpy(low).astype(np.float64))))
    tol = 5e-2 if dtype == flow.float16 else 1.5e-1
    assert_close(out.double(), ref, rtol=tol, atol=tol)
