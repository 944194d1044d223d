"""Tier (b): ops added through the registry's rows alone (issue 28's acceptance): einsum,
addmm, baddbmm, logaddexp, lerp, hypot, amax / amin, against numpy and finite differences."""

import numpy as np
import pytest
from _check import check_grad, rng

import oneflowlike as flow


def _t(a):
    return flow.tensor(np.asarray(a))


@pytest.mark.parametrize(
    "equation, shapes",
    [
        ("ij,jk->ik", [(3, 4), (4, 5)]),
        ("ij,jk", [(3, 4), (4, 5)]),
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
        ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
        ("i,i->", [(5,), (5,)]),
        ("i,j->ij", [(3,), (4,)]),
        ("ij->ji", [(3, 4)]),
        ("ij->", [(3, 4)]),
        ("ij->j", [(3, 4)]),
        ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
        ("b...d,d->b...", [(2, 3, 4, 5), (5,)]),
        ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
        ("ab,cd->abcd", [(2, 3), (4, 1)]),
        ("iJ,J->i", [(3, 4), (4,)]),
    ],
)
def test_einsum_matches_numpy(equation, shapes):
    r = rng(0)
    arrays = [r.standard_normal(s) for s in shapes]
    got = flow.einsum(equation, *[_t(a) for a in arrays]).numpy()
    np.testing.assert_allclose(got, np.einsum(equation, *arrays), rtol=1e-10, atol=1e-12)
    as_list = flow.einsum(equation, [_t(a) for a in arrays]).numpy()
    np.testing.assert_allclose(as_list, got)


def test_einsum_gradients():
    r = rng(1)
    check_grad(lambda a, b: flow.einsum("bij,jk->bki", a, b), [r.randn(2, 3, 4), r.randn(4, 2)])


def test_einsum_repeated_subscripts_take_diagonals():
    a = rng(2).randn(3, 4, 3)
    for eq in ("iji->j", "iji->ij", "iji", "iji->", "iji,j->i"):
        ops = [a] if "," not in eq else [a, rng(4).randn(4)]
        want = np.einsum(eq, *ops)
        got = flow.einsum(eq, *[flow.tensor(o) for o in ops]).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12)
    m = rng(3).randn(4, 4)
    np.testing.assert_allclose(flow.einsum("ii", flow.tensor(m)).numpy(), np.trace(m))
    check_grad(lambda x: flow.einsum("iji->ij", x), [a])


@pytest.mark.parametrize(
    "equation, shapes, message",
    [
        ("ij,jk->ik", [(3, 4)], "names 2 operands, 1 given"),
        ("ij->i", [(3, 4, 5)], "operand 0 has 3 dimensions"),
        ("ii->i", [(3, 4)], "repeats a subscript over dims of sizes 3 and 4"),
        ("ij,jk->ik", [(3, 4), (5, 6)], "sizes differ"),
        ("ij->k", [(3, 4)], "appears in no operand"),
        ("i1->i", [(3, 4)], "invalid subscript '1'"),
    ],
)
def test_einsum_errors_name_the_equation_problem(equation, shapes, message):
    with pytest.raises(RuntimeError, match=r"\[einsum\].*" + message):
        flow.einsum(equation, *[flow.ones(*s) for s in shapes])


def test_addmm_and_baddbmm():
    r = rng(2)
    c, a, b = r.randn(3, 5), r.randn(3, 4), r.randn(4, 5)
    got = flow.addmm(_t(c), _t(a), _t(b), beta=0.5, alpha=2.0).numpy()
    np.testing.assert_allclose(got, 0.5 * c + 2.0 * a @ b, rtol=1e-12)
    row = r.randn(5)  # broadcasts
    np.testing.assert_allclose(flow.addmm(_t(row), _t(a), _t(b)).numpy(), row + a @ b, rtol=1e-12)
    nan = np.full((3, 5), np.nan)  # beta 0: input not read
    assert np.isfinite(flow.addmm(_t(nan), _t(a), _t(b), beta=0).numpy()).all()
    check_grad(lambda c, a, b: flow.addmm(c, a, b, beta=0.5, alpha=2.0), [c, a, b])
    bc, ba, bb = r.randn(2, 3, 5), r.randn(2, 3, 4), r.randn(2, 4, 5)
    np.testing.assert_allclose(
        _t(bc).baddbmm(_t(ba), _t(bb), alpha=3.0).numpy(), bc + 3.0 * ba @ bb, rtol=1e-12
    )
    with pytest.raises(RuntimeError, match=r"\[addmm\] mat1 must be 2-d"):
        flow.addmm(flow.ones(3), flow.ones(3), flow.ones(3, 3))
    with pytest.raises(RuntimeError, match=r"\[baddbmm\].*different batch sizes"):
        flow.baddbmm(flow.ones(1), flow.ones(2, 3, 4), flow.ones(3, 4, 5))
    with pytest.raises(RuntimeError, match=r"\[addmm\].*\(4, 5\)"):
        flow.addmm(flow.ones(4, 5), flow.ones(3, 4), flow.ones(4, 5))


def test_logaddexp_is_stable_and_matches_numpy():
    a = np.array([0.0, 1000.0, -1000.0, -np.inf, np.inf, 3.0])
    b = np.array([0.0, 1000.0, -1001.0, -np.inf, np.inf, -np.inf])
    np.testing.assert_allclose(flow.logaddexp(_t(a), _t(b)).numpy(), np.logaddexp(a, b))
    f32 = flow.logaddexp(flow.tensor([1.0, 2.0]), 0.5)
    assert f32.dtype == flow.float32
    np.testing.assert_allclose(f32.numpy(), np.logaddexp([1.0, 2.0], 0.5), rtol=1e-6)
    r = rng(3)
    check_grad(flow.logaddexp, [r.randn(3, 4), r.randn(4)])


def test_hypot_does_not_overflow_and_has_its_gradient():
    a, b = np.array([3.0, 1e200, 0.0]), np.array([4.0, 1e200, 2.0])
    np.testing.assert_allclose(flow.hypot(_t(a), _t(b)).numpy(), np.hypot(a, b))
    assert flow.tensor([3, 4]).hypot(flow.tensor([4, 3])).dtype == flow.float32
    r = rng(4)
    check_grad(flow.hypot, [r.randn(3, 4), r.randn(3, 4)])


def test_lerp_with_tensor_and_number_weights():
    r = rng(5)
    x, e, w = r.randn(3, 4), r.randn(3, 4), r.rand(3, 4)
    np.testing.assert_allclose(flow.lerp(_t(x), _t(e), _t(w)).numpy(), x + w * (e - x))
    np.testing.assert_allclose(_t(x).lerp(_t(e), 0.25).numpy(), x + 0.25 * (e - x))
    check_grad(lambda x, e, w: flow.lerp(x, e, w), [x, e, w])
    t = _t(x)
    assert t.lerp_(_t(e), 0.5) is t
    np.testing.assert_allclose(t.numpy(), x + 0.5 * (e - x))


def test_amax_amin_reduce_over_several_dims():
    r = rng(6)
    x = r.randn(2, 3, 4)
    np.testing.assert_allclose(flow.amax(_t(x), dim=(0, 2)).numpy(), x.max(axis=(0, 2)))
    np.testing.assert_allclose(_t(x).amin(1, keepdim=True).numpy(), x.min(axis=1, keepdims=True))
