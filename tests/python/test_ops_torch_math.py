"""torch.*'s and torch.special's elementwise math (issue 44), against PyTorch: forward in float64
and float32, gradients in float64 against torch's autograd, integer ops on int64, edge values
and error messages."""

import numpy as np
import pytest
import torch

import oneflowlike as flow

R = np.random.default_rng(0)
DOMAINS = {
    "any": lambda: R.standard_normal((3, 4)) * 2,
    "unit": lambda: R.uniform(-0.9, 0.9, (3, 4)),
    "gt1": lambda: R.uniform(1.1, 4.0, (3, 4)),
    "pos": lambda: R.uniform(0.2, 4.0, (3, 4)),
    "prob": lambda: R.uniform(0.05, 0.95, (3, 4)),
    "wide": lambda: R.uniform(-30, 30, (3, 4)),
}


def _pair(name):
    """(oneflowlike function, torch function) of a dotted name (special.x as well)."""
    fobj, tobj = flow, torch
    for part in name.split("."):
        fobj, tobj = getattr(fobj, part), getattr(tobj, part)
    return fobj, tobj


def _check(name, arrays, grad=True, f=None, t=None, rtol=1e-10, atol=1e-12, kwargs=None):
    kwargs = kwargs or {}
    if f is None:
        f, t = _pair(name)
    fx = [flow.tensor(a, requires_grad=grad) for a in arrays]
    tx = [torch.tensor(a, requires_grad=grad) for a in arrays]
    fy, ty = f(*fx, **kwargs), t(*tx, **kwargs)
    assert fy.dtype == getattr(flow, str(ty.dtype).split(".")[1]), name
    np.testing.assert_allclose(fy.detach().numpy(), ty.detach().numpy(), rtol=rtol, atol=atol)
    if grad:
        w = R.standard_normal(ty.shape)
        fg = flow.autograd.grad(fy, fx, flow.tensor(w))
        tg = torch.autograd.grad(ty, tx, torch.tensor(w))
        for a, b in zip(fg, tg):
            np.testing.assert_allclose(a.numpy(), b.numpy(force=True), rtol=1e-8, atol=1e-10)
    f32 = f(*[flow.tensor(a.astype(np.float32)) for a in arrays], **kwargs)
    t32 = t(*[torch.tensor(a.astype(np.float32)) for a in arrays], **kwargs)
    assert str(f32.dtype).split(".")[-1] == str(t32.dtype).split(".")[-1]
    np.testing.assert_allclose(f32.numpy(), t32.numpy(), rtol=2e-5, atol=2e-6)


UNARY = [
    ("acos", "unit"), ("arccos", "unit"), ("asin", "unit"), ("arcsin", "unit"), ("atan", "any"),
    ("arctan", "any"), ("sinh", "any"), ("cosh", "any"), ("tan", "unit"), ("asinh", "any"),
    ("arcsinh", "any"), ("acosh", "gt1"), ("arccosh", "gt1"), ("atanh", "unit"),
    ("arctanh", "unit"), ("exp2", "any"), ("log2", "pos"), ("log10", "pos"), ("erfc", "any"),
    ("erfinv", "unit"), ("lgamma", "pos"), ("digamma", "pos"), ("digamma", "any"), ("i0", "any"),
    ("i0", "wide"), ("sinc", "any"), ("deg2rad", "any"), ("rad2deg", "any"), ("frac", "any"),
    ("sgn", "any"), ("logit", "prob"), ("negative", "any"), ("absolute", "any"),
    ("special.i0e", "wide"), ("special.i1", "wide"), ("special.i1e", "wide"),
    ("special.ndtr", "any"), ("special.ndtri", "prob"), ("special.log_ndtr", "wide"),
    ("special.erfcx", "wide"), ("special.entr", "pos"), ("special.expit", "any"),
    ("special.gammaln", "pos"), ("special.psi", "pos"), ("special.sinc", "any"),
    ("special.logit", "prob"),
]  # fmt: skip


@pytest.mark.parametrize("name, domain", UNARY)
def test_unary_matches_torch_with_gradients(name, domain):
    _check(name, [DOMAINS[domain]()])


# torch has no derivative for these: forward only.
@pytest.mark.parametrize(
    "name, domain",
    [
        ("special.bessel_j0", "wide"), ("special.bessel_j1", "wide"), ("special.bessel_y0", "pos"),
        ("special.bessel_y1", "pos"), ("special.spherical_bessel_j0", "wide"),
        ("special.modified_bessel_i0", "wide"), ("special.modified_bessel_i1", "wide"),
        ("trunc", "any"), ("fix", "any"), ("signbit", "any"), ("isposinf", "any"),
    ],
)  # fmt: skip
def test_unary_forward_matches_torch(name, domain):
    # torch's float64 Bessel functions are off by up to 2e-7 (absolute) near their zeros (ours are within
    # 1e-15 of mpmath there).
    _check(name, [DOMAINS[domain]()], grad=False, rtol=1e-6, atol=1e-6)


def test_polygamma_mvlgamma_and_their_gradients():
    x = DOMAINS["pos"]()
    # torch's polygamma(n >= 1) is off by ~3e-10 relative (ours is within 2e-16 of mpmath).
    for n in (0, 1, 2, 4):
        f, t = (lambda a, n=n: flow.polygamma(n, a)), (lambda a, n=n: torch.polygamma(n, a))
        _check("", [x], f=f, t=t, rtol=1e-8)
        f, t = (lambda a, n=n: a.polygamma(n)), (lambda a, n=n: a.polygamma(n))
        _check("", [x], f=f, t=t, rtol=1e-8)
    _check("mvlgamma", [x + 1.5], kwargs={"p": 3})
    _check("special.multigammaln", [x + 1.0], kwargs={"p": 2})
    _check("logit", [DOMAINS["unit"]() + 0.5], kwargs={"eps": 0.2})


BINARY = [
    ("atan2", "any", "any"), ("arctan2", "any", "any"), ("fmod", "any", "pos"),
    ("fmax", "any", "any"), ("fmin", "any", "any"), ("xlogy", "any", "pos"),
    ("logaddexp2", "any", "any"), ("float_power", "pos", "any"), ("special.xlog1py", "any", "pos"),
    ("special.xlogy", "any", "pos"), ("true_divide", "any", "pos"), ("multiply", "any", "any"),
    ("subtract", "any", "any"),
]  # fmt: skip


@pytest.mark.parametrize("name, da, db", BINARY)
def test_binary_matches_torch_with_gradients(name, da, db):
    _check(name, [DOMAINS[da](), DOMAINS[db]()[:1]])  # the second broadcasts


@pytest.mark.parametrize("name", ["special.zeta", "igamma", "igammac", "special.gammainc"])
def test_functions_differentiable_in_their_second_argument(name):
    a = [DOMAINS["gt1"](), DOMAINS["pos"]()]
    _check(name, a, grad=False, rtol=1e-8)  # torch's zeta and igamma err by ~5e-10 relative
    f, t = _pair(name)
    fa, fx = flow.tensor(a[0]), flow.tensor(a[1], requires_grad=True)
    ta, tx = torch.tensor(a[0]), torch.tensor(a[1], requires_grad=True)
    f(fa, fx).sum().backward()
    t(ta, tx).sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-8)
    with pytest.raises(RuntimeError, match="not implemented"):
        f(flow.tensor(a[0], requires_grad=True), fx).sum().backward()


def test_copysign_nextafter_heaviside_ldexp_and_zero_signs():
    x, y = DOMAINS["any"](), DOMAINS["any"]()
    y[0, :2] = [0.0, -0.0]
    _check("copysign", [x, y], grad=False)
    _check("nextafter", [x, y], grad=False, rtol=0, atol=0)
    fx = flow.tensor(x, requires_grad=True)
    flow.copysign(fx, flow.tensor(y)).sum().backward()
    tx = torch.tensor(x, requires_grad=True)
    torch.copysign(tx, torch.tensor(y)).sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy())
    z = np.array([-1.5, -0.0, 0.0, 2.0, np.nan])
    v = np.full(5, 0.5)
    np.testing.assert_array_equal(
        flow.heaviside(flow.tensor(z), flow.tensor(v)).numpy(),
        torch.heaviside(torch.tensor(z), torch.tensor(v)).numpy(),
    )
    np.testing.assert_array_equal(flow.signbit(flow.tensor(z)).numpy(), np.signbit(z))
    e = np.array([0, 3, -2, 10])
    np.testing.assert_allclose(
        flow.ldexp(flow.tensor(x[0]), flow.tensor(e)).numpy(),
        torch.ldexp(torch.tensor(x[0]), torch.tensor(e)).numpy(),
    )
    assert flow.ldexp(flow.tensor([1, 2]), flow.tensor([3, 1])).dtype == flow.float32


@pytest.mark.parametrize(
    "name",
    [
        "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
        "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
        "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
        "laguerre_polynomial_l", "legendre_polynomial_p",
    ],
)  # fmt: skip
def test_orthogonal_polynomials(name):
    x = R.uniform(-1, 1, (4, 1)) if "shifted" not in name else R.uniform(0, 1, (4, 1))
    n = np.arange(7)
    f, t = _pair("special." + name)
    got = f(flow.tensor(x), flow.tensor(n)).numpy()
    np.testing.assert_allclose(
        got, t(torch.tensor(x), torch.tensor(n)).numpy(), rtol=1e-9, atol=1e-9
    )
    np.testing.assert_allclose(
        f(flow.tensor(x), 3).numpy(), t(torch.tensor(x), 3).numpy(), rtol=1e-9
    )


def test_polynomials_at_huge_degrees_end_at_once():
    # Degrees from 2**20 up give NaN rather than loop (1e17 steps took years); overflow stops early.
    x = flow.tensor([0.5, 3.0])
    for n in (1e17, 2.0**21, float("inf")):
        assert np.isnan(flow.special.legendre_polynomial_p(x, n).numpy()).all()
    got = flow.special.hermite_polynomial_h(x, 2.0**19).numpy()
    assert np.isinf(got[1]) or np.isnan(got[1])
    assert flow.special.chebyshev_polynomial_t(x, -5.0).numpy().tolist() == [0.0, 0.0]


EDGES = {
    "digamma": [0.0, -0.0, -2.0, -2.5, 1e-8, 30.0],
    "erfinv": [-1.0, 1.0, 0.0, 0.999999, -1e-10, 1.5],
    "lgamma": [0.0, -1.5, 1e-300, 1e5],
    "i0": [0.0, 19.9, 20.1, 100.0, 800.0],
    "sinc": [0.0, 1.0, -3.0],
    "special.i0e": [0.0, 19.9, 20.1, 800.0, -1e4],
    "special.i1": [0.0, -19.9, 20.1, 100.0],
    "special.erfcx": [-30.0, -5.0, 0.0, 25.9, 26.1, 1e3, 1e200],
    "special.log_ndtr": [-1e3, -40.0, -5.0, 0.0, 5.0, 40.0],
    "special.ndtri": [0.0, 1.0, 1e-300, 1e-20, 0.5, 1 - 1e-12],
    "special.entr": [0.0, -1.0, 1.0],
}


@pytest.mark.parametrize("name", list(EDGES))
def test_edge_values(name):
    a = np.array(EDGES[name])
    f, t = _pair(name)
    want = t(torch.tensor(a)).numpy()
    np.testing.assert_allclose(f(flow.tensor(a)).numpy(), want, rtol=1e-9, atol=1e-15)


def test_zeta_and_polygamma_edges():
    x = np.array([2.0, 1.0, 3.0, 4.0, 2.0, 0.5])
    q = np.array([1.0, 1.0, -2.0, -2.5, 1e6, 1.0])
    np.testing.assert_allclose(
        flow.special.zeta(flow.tensor(x), flow.tensor(q)).numpy(),
        torch.special.zeta(torch.tensor(x), torch.tensor(q)).numpy(),
        rtol=1e-9,
    )
    a = np.array([0.0, 0.5, 3.0, 100.0, 2.0])
    b = np.array([1.0, 0.0, np.inf, 90.0, 1e-3])
    for name in ("igamma", "igammac"):
        f, t = _pair(name)
        got = f(flow.tensor(a), flow.tensor(b)).numpy()
        # torch's igamma(100, 90) is off by 7e-10 relative (ours is within 1e-13 of mpmath).
        np.testing.assert_allclose(got, t(torch.tensor(a), torch.tensor(b)).numpy(), rtol=1e-8)


INT_OPS = ["gcd", "lcm", "bitwise_and", "bitwise_or", "bitwise_xor", "fmod", "fmax", "fmin"]


@pytest.mark.parametrize("name", INT_OPS)
def test_integer_binary_ops_on_int64(name):
    a = np.array([[12, -18, 0, 7, -9, 2**40]])
    b = np.array([[8], [6], [-5]])
    f, t = _pair(name)
    got = f(flow.tensor(a), flow.tensor(b))
    want = t(torch.tensor(a), torch.tensor(b))
    assert got.dtype == flow.int64
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_shifts_not_and_operators_on_integers_and_bools():
    a = np.array([5, -5, 1, -(2**62), 255])
    s = np.array([0, 1, 63, 2, 70])
    fa, fs, ta, ts = flow.tensor(a), flow.tensor(s), torch.tensor(a), torch.tensor(s)
    for name in ("bitwise_left_shift", "bitwise_right_shift"):
        f, t = _pair(name)
        np.testing.assert_array_equal(f(fa, fs).numpy(), t(ta, ts).numpy())
    np.testing.assert_array_equal((fa << 2).numpy(), (ta << 2).numpy())
    np.testing.assert_array_equal((fa >> fs).numpy(), (ta >> ts).numpy())
    np.testing.assert_array_equal((~fa).numpy(), (~ta).numpy())
    np.testing.assert_array_equal(flow.bitwise_not(fa).numpy(), (~ta).numpy())
    np.testing.assert_array_equal((fa & 6).numpy(), (ta & 6).numpy())
    np.testing.assert_array_equal((3 | fa).numpy(), (3 | ta).numpy())
    np.testing.assert_array_equal((fa ^ fs).numpy(), (ta ^ ts).numpy())
    m, n = np.array([True, False, True]), np.array([True, True, False])
    fm, fn = flow.tensor(m), flow.tensor(n)
    assert (fm & fn).dtype == flow.bool
    np.testing.assert_array_equal((fm & fn).numpy(), m & n)
    np.testing.assert_array_equal((fm | fn).numpy(), m | n)
    np.testing.assert_array_equal((fm ^ fn).numpy(), m ^ n)
    np.testing.assert_array_equal((~fm).numpy(), ~m)
    i8 = flow.tensor(np.array([1, -128], dtype=np.int8))
    np.testing.assert_array_equal((i8 << 7).numpy(), np.array([-128, 0], dtype=np.int8))


def test_division_modes_rsub_clamps_positive_and_isreal():
    a, b = np.array([7, -7, 9, -9]), np.array([2, 2, -4, -4])
    for mode in (None, "trunc", "floor"):
        got = flow.div(flow.tensor(a), flow.tensor(b), rounding_mode=mode)
        want = torch.div(torch.tensor(a), torch.tensor(b), rounding_mode=mode)
        assert got.dtype == getattr(flow, str(want.dtype).split(".")[1])
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        got = flow.tensor(a * 1.5).divide(flow.tensor(b), rounding_mode=mode)
        np.testing.assert_array_equal(
            got.numpy(), torch.tensor(a * 1.5).divide(torch.tensor(b), rounding_mode=mode).numpy()
        )
    x = DOMAINS["any"]()
    _check("rsub", [x, x[:1]], kwargs={"alpha": 2})
    _check("", [x], f=lambda t: flow.clamp_min(t, 0.3), t=lambda t: torch.clamp_min(t, 0.3))
    _check("", [x], f=lambda t: t.clamp_max(-0.1), t=lambda t: t.clamp_max(-0.1))
    _check("clamp_min", [x, x[:1]])
    p = flow.tensor(x)
    assert flow.positive(p) is p
    assert flow.isreal(p).dtype == flow.bool and flow.isreal(p).numpy().all()
    z = np.array([-np.inf, np.inf, 1.0])
    np.testing.assert_array_equal(flow.isneginf(flow.tensor(z)).numpy(), np.isneginf(z))
    np.testing.assert_array_equal(flow.isposinf(flow.tensor([1, 2])).numpy(), [False, False])


def test_integers_promote_to_float():
    i = flow.tensor([1, 2, 3])
    for name in ("acos", "exp2", "log10", "erfinv", "lgamma", "i0", "sinc", "deg2rad", "logit"):
        assert getattr(flow, name)(i).dtype == flow.float32, name
    assert flow.trunc(i).dtype == flow.int64 and flow.float_power(i, 2).dtype == flow.float64
    assert flow.atan2(i, i).dtype == flow.float32 and flow.fmod(i, i).dtype == flow.int64


def test_errors_name_the_op():
    with pytest.raises(TypeError, match=r"\[gcd\].*integer"):
        flow.gcd(flow.tensor([1.0]), flow.tensor([2.0]))
    with pytest.raises(TypeError, match=r"\[bitwise_not\]"):
        ~flow.tensor([1.0])
    with pytest.raises(TypeError, match=r"\[bitwise_left_shift\]"):
        flow.tensor([True]) << flow.tensor([True])
    with pytest.raises(RuntimeError, match=r"\[polygamma\].*negative n"):
        flow.polygamma(-1, flow.tensor([1.0]))
    with pytest.raises(RuntimeError, match=r"\[div\].*rounding_mode"):
        flow.div(flow.tensor([1.0]), 2, rounding_mode="round")
    with pytest.raises(RuntimeError, match=r"\[mvlgamma\].*p has to be"):
        flow.mvlgamma(flow.tensor([3.0]), 0)
    with pytest.raises(TypeError, match=r"\[frac\]"):
        flow.frac(flow.tensor([1, 2]))
    with pytest.raises(RuntimeError, match=r"\[fmod\].*ZeroDivisionError"):
        flow.fmod(flow.tensor([1, 2]), flow.tensor([0, 1]))
    with pytest.raises(RuntimeError, match=r"\[atan2\].*\(2,\).*\(3,\)"):
        flow.atan2(flow.ones(2), flow.ones(3))


def test_on_meta_and_in_a_graph():
    m = flow.ones(2, 3, device="meta")
    assert flow.erfinv(m).shape == (2, 3) and flow.gcd(m.long(), m.long()).dtype == flow.int64
    x = flow.tensor(DOMAINS["unit"]())

    class G(flow.nn.Graph):
        def build(self, t):
            return flow.atan2(flow.erfinv(t), flow.special.i1e(t)) + flow.logit(t.abs(), 0.1)

    np.testing.assert_allclose(
        G()(x).numpy(),
        (flow.atan2(flow.erfinv(x), flow.special.i1e(x)) + flow.logit(x.abs(), 0.1)).numpy(),
    )
