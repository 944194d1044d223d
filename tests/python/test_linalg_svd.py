"""Tier (b): linalg.svd (U, S, Vh), svdvals, torch.svd and linalg.pinv against numpy and PyTorch:
reconstruction, singular values, shapes (meta too), the pseudo-inverse of square, tall, wide,
rank-deficient and batched inputs, the gradients through both, and the errors. The GPU tier at
the end runs the cuSOLVER kernel against the CPU's."""

import numpy as np
import pytest
import torch
from _check import rng
from test_cuda import needs_gpu

import oneflowlike as flow

SHAPES = [(4, 4), (6, 3), (3, 6), (2, 5, 3), (2, 3, 3, 5), (1, 1), (7, 1)]


def _a(shape, seed=0, dtype=np.float64):
    return rng(seed).standard_normal(shape).astype(dtype)


def _low_rank(m, n, r, batch=(), seed=0):
    g = rng(seed)
    return g.standard_normal((*batch, m, r)) @ g.standard_normal((*batch, r, n))


def _check_factors(a, U, S, Vh, full, atol):
    m, n = a.shape[-2:]
    k = min(m, n)
    U, S, Vh = U.numpy(), S.numpy(), Vh.numpy()
    assert U.shape == (*a.shape[:-2], m, m if full else k)
    assert S.shape == (*a.shape[:-2], k)
    assert Vh.shape == (*a.shape[:-2], n if full else k, n)
    np.testing.assert_allclose((U[..., :k] * S[..., None, :]) @ Vh[..., :k, :], a, atol=atol)
    eye = np.broadcast_to(np.eye(U.shape[-1]), U.shape[:-2] + (U.shape[-1],) * 2)
    np.testing.assert_allclose(np.swapaxes(U, -1, -2) @ U, eye, atol=atol)
    eye = np.broadcast_to(np.eye(Vh.shape[-2]), Vh.shape[:-1] + (Vh.shape[-2],))
    np.testing.assert_allclose(Vh @ np.swapaxes(Vh, -1, -2), eye, atol=atol)
    assert np.all(np.diff(S, axis=-1) <= 0), "singular values descend"
    np.testing.assert_allclose(S, np.linalg.svd(a, compute_uv=False), atol=atol)


@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_svd_reconstructs_and_matches_numpys_singular_values(shape, full):
    a = _a(shape)
    U, S, Vh = flow.linalg.svd(flow.tensor(a), full_matrices=full)
    assert U.dtype == S.dtype == Vh.dtype == flow.float64
    _check_factors(a, U, S, Vh, full, atol=1e-10)


def test_svd_in_float32_and_the_named_tuple():
    a = _a((3, 5, 4), dtype=np.float32)
    out = flow.linalg.svd(flow.tensor(a))
    assert out.S.dtype == flow.float32
    _check_factors(a, out.U, out.S, out.Vh, True, atol=1e-5)
    assert flow.linalg_svd is flow.linalg.svd  # torch.linalg_svd, as PyTorch spells it too


def test_svd_of_an_empty_matrix_gives_identities_for_the_full_bases():
    U, S, Vh = flow.linalg.svd(flow.zeros(2, 3, 0, dtype=flow.float64))
    assert tuple(S.shape) == (2, 0)
    np.testing.assert_array_equal(U.numpy(), np.broadcast_to(np.eye(3), (2, 3, 3)))
    assert tuple(Vh.shape) == (2, 0, 0)
    U, S, Vh = flow.linalg.svd(flow.zeros(3, 0), full_matrices=False)
    assert tuple(U.shape) == (3, 0) and tuple(Vh.shape) == (0, 0)


@pytest.mark.parametrize("full", [True, False])
def test_svd_on_meta_gives_the_shapes(full):
    U, S, Vh = flow.linalg.svd(flow.empty(2, 7, 3, device="meta"), full_matrices=full)
    assert all(t.device.type == "meta" for t in (U, S, Vh))
    assert tuple(U.shape) == (2, 7, 7 if full else 3)
    assert tuple(S.shape) == (2, 3)
    assert tuple(Vh.shape) == (2, 3, 3)
    assert tuple(flow.linalg.pinv(flow.empty(4, 2, 5, device="meta")).shape) == (4, 5, 2)


def test_svdvals_and_torch_svd():
    a = _a((2, 5, 3))
    np.testing.assert_allclose(
        flow.linalg.svdvals(flow.tensor(a)).numpy(), np.linalg.svd(a, compute_uv=False), atol=1e-12
    )
    U, S, V = flow.svd(flow.tensor(a))  # reduced, and V rather than Vh
    assert tuple(U.shape) == (2, 5, 3) and tuple(V.shape) == (2, 3, 3)
    np.testing.assert_allclose(
        (U.numpy() * S.numpy()[..., None, :]) @ np.swapaxes(V.numpy(), -1, -2), a, atol=1e-12
    )
    U, S, V = flow.tensor(a).svd(some=False)
    assert tuple(U.shape) == (2, 5, 5) and tuple(V.shape) == (2, 3, 3)
    U, S, V = flow.svd(flow.tensor(a), compute_uv=False)
    assert not U.numpy().any() and not V.numpy().any() and tuple(U.shape) == (2, 5, 5)


# The pseudo-inverse against PyTorch's, same defaults.
PINV = {
    "square": _a((4, 4)),
    "tall": _a((6, 3), seed=1),
    "wide": _a((3, 6), seed=2),
    "rank_deficient_square": _low_rank(5, 5, 3),
    "rank_deficient_tall": _low_rank(6, 4, 2, seed=1),
    "rank_deficient_wide": _low_rank(4, 6, 2, seed=2),
    "batched": _a((2, 3, 4, 5), seed=3),
    "batched_rank_deficient": _low_rank(4, 3, 1, batch=(3,), seed=4),
    "zero": np.zeros((3, 2)),
}


@pytest.mark.parametrize("name", list(PINV))
def test_pinv_matches_torch(name):
    a = PINV[name]
    want = torch.linalg.pinv(torch.from_numpy(a)).numpy()
    np.testing.assert_allclose(flow.linalg.pinv(flow.tensor(a)).numpy(), want, atol=1e-10)
    a32 = a.astype(np.float32)
    want32 = torch.linalg.pinv(torch.from_numpy(a32)).numpy()
    np.testing.assert_allclose(flow.linalg.pinv(flow.tensor(a32)).numpy(), want32, atol=2e-4)


def _close_to_scale(got, want, rel=1e-9):
    np.testing.assert_allclose(got, want, rtol=0, atol=rel * np.abs(want).max())


def test_pinv_tolerances_as_torch():
    # Singular values 1, 1e-3 and 1e-6: each cutoff keeps a different number of them.
    g = rng(5)
    q1, _ = np.linalg.qr(g.standard_normal((5, 5)))
    q2, _ = np.linalg.qr(g.standard_normal((3, 3)))
    a = (q1[:, :3] * np.array([1.0, 1e-3, 1e-6])) @ q2
    t, f = torch.from_numpy(a), flow.tensor(a)
    for kwargs in [
        {},
        {"atol": 1e-2},
        {"rtol": 1e-4},
        {"atol": 1e-12, "rtol": 1e-2},
        {"atol": 0.0},
    ]:
        _close_to_scale(
            flow.linalg.pinv(f, **kwargs).numpy(), torch.linalg.pinv(t, **kwargs).numpy()
        )
    want = torch.linalg.pinv(t, rcond=1e-4).numpy()
    _close_to_scale(flow.linalg.pinv(f, rcond=1e-4).numpy(), want)
    _close_to_scale(flow.linalg.pinv(f, 1e-4).numpy(), want)
    _close_to_scale(f.pinverse(rcond=1e-4).numpy(), torch.pinverse(t, rcond=1e-4).numpy())
    assert np.abs(flow.linalg.pinv(f, rtol=1e-4).numpy()).max() < 1e4  # 1e-6 dropped


def test_pinv_hermitian_reads_the_lower_triangle_as_torch():
    a = _a((2, 4, 4), seed=6)
    want = torch.linalg.pinv(torch.from_numpy(a), hermitian=True).numpy()
    np.testing.assert_allclose(
        flow.linalg.pinv(flow.tensor(a), hermitian=True).numpy(), want, atol=1e-10
    )


def _grad_flow(fn, a):
    x = flow.tensor(a).requires_grad_()
    fn(flow, x).backward()
    return x.grad.numpy()


def _grad_torch(fn, a):
    x = torch.from_numpy(a.copy()).requires_grad_()
    fn(torch, x).backward()
    return x.grad.numpy()


@pytest.mark.parametrize("name", list(PINV)[:-1])
def test_pinv_gradient_matches_torch(name):
    a = PINV[name]
    w = _a(a.shape[:-2] + (a.shape[-1], a.shape[-2]), seed=9)

    def loss(lib, x):
        return (lib.linalg.pinv(x) * lib.tensor(w)).sum()

    np.testing.assert_allclose(_grad_flow(loss, a), _grad_torch(loss, a), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6), (2, 5, 3)], ids=str)
def test_svd_gradients_match_torch(shape, full):
    a = _a(shape, seed=7)
    k = min(shape[-2:])
    w_s = _a(shape[:-2] + (k,), seed=8)
    w_uv = _a(shape[:-2] + (shape[-2], shape[-1]), seed=10)

    def on_s(lib, x):
        return (lib.linalg.svd(x, full_matrices=full)[1] * lib.tensor(w_s)).sum()

    def on_vectors(lib, x):  # U_k Vh_k: independent of the singular vectors' signs
        U, S, Vh = lib.linalg.svd(x, full_matrices=full)
        return ((U[..., :k] @ Vh[..., :k, :]) * lib.tensor(w_uv)).sum() + (S * S).sum()

    for loss in (on_s, on_vectors):
        np.testing.assert_allclose(_grad_flow(loss, a), _grad_torch(loss, a), rtol=1e-7, atol=1e-9)
    svdvals = _grad_flow(lambda lib, x: (lib.linalg.svdvals(x) * lib.tensor(w_s)).sum(), a)
    np.testing.assert_allclose(svdvals, _grad_torch(on_s, a), rtol=1e-7, atol=1e-9)


def test_a_loss_on_the_singular_values_of_a_rank_deficient_matrix_stays_finite():
    a = _low_rank(5, 4, 2, seed=11)
    # The zero singular values' vectors are any basis of the null spaces (LAPACKs differ), and
    # so is the gradient of a loss that weighs them: it must only be finite.
    every = _grad_flow(lambda lib, x: lib.linalg.svdvals(x).sum(), a)
    assert np.isfinite(every).all()
    # Weighing only the two nonzero ones, the gradient is unique: U_2 Vh_2, as torch's.
    w = np.array([1.0, 1.0, 0.0, 0.0])
    got = _grad_flow(lambda lib, x: (lib.linalg.svdvals(x) * lib.tensor(w)).sum(), a)
    want = _grad_torch(lambda lib, x: (lib.linalg.svdvals(x) * lib.tensor(w)).sum(), a)
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("fn", ["svd", "svdvals", "pinv"])
def test_errors_name_the_op_and_the_input(fn):
    op = getattr(flow.linalg, fn)
    with pytest.raises(RuntimeError, match=rf"linalg_{fn}.*at least 2 dimensions.*\(4,\)"):
        op(flow.ones(4, dtype=flow.float64))
    with pytest.raises(TypeError, match=rf"linalg_{fn}.*float32 or float64.*int64.*\(3, 3\)"):
        op(flow.ones(3, 3, dtype=flow.int64))


def test_pinv_hermitian_needs_square_matrices():
    with pytest.raises(RuntimeError, match=r"linalg_pinv.*square.*\(3, 4\)"):
        flow.linalg.pinv(flow.ones(3, 4), hermitian=True)


def test_batch_dims_may_be_split_and_the_matrix_dims_are_broadcast():
    a = _a((4, 5, 3), dtype=np.float32)
    probe = flow._C.sbp_simulated_global(flow.tensor(a), [4, 5, 3], flow.sbp.broadcast, 0, 2)
    op, declared = flow._C.sbp_declared(lambda: flow.linalg.svd(probe))
    assert op == "linalg_svd"
    # The all-broadcast signature is always there; the rule adds S(0) on every input and output.
    sigs = {(tuple(s.to_string() for s in i), tuple(s.to_string() for s in o)) for i, o in declared}
    assert (("S(0)",), ("S(0)", "S(0)", "S(0)")) in sigs
    assert not any("S(1)" in i or "S(2)" in i or "P" in "".join(i) for i, _ in sigs)


@needs_gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_svd_on_the_gpu_reconstructs_and_matches_the_cpu(shape, full, dtype):
    a = _a(shape, dtype=dtype)
    U, S, Vh = flow.linalg.svd(flow.tensor(a).cuda(), full_matrices=full)
    assert U.device == flow.device("cuda:0")
    atol = 1e-4 if dtype == np.float32 else 1e-10
    _check_factors(a, U.cpu(), S.cpu(), Vh.cpu(), full, atol=atol)
    np.testing.assert_allclose(
        S.cpu().numpy(), flow.linalg.svdvals(flow.tensor(a)).numpy(), atol=atol
    )


@needs_gpu
def test_pinv_and_its_gradient_on_the_gpu_match_torch():
    for name in ("tall", "wide", "batched_rank_deficient"):
        a = PINV[name]
        want = torch.linalg.pinv(torch.from_numpy(a)).numpy()
        np.testing.assert_allclose(
            flow.linalg.pinv(flow.tensor(a).cuda()).cpu().numpy(), want, atol=1e-10
        )
        x = flow.tensor(a).cuda().requires_grad_()
        flow.linalg.pinv(x).sum().backward()
        np.testing.assert_allclose(
            x.grad.cpu().numpy(), _grad_torch(lambda lib, t: lib.linalg.pinv(t).sum(), a), atol=1e-9
        )


def test_a_matrix_holding_nan_is_refused_naming_it():
    a = flow.tensor([[[1.0, 2.0], [3.0, 4.0]], [[float("nan"), 1.0], [2.0, 3.0]]])
    with pytest.raises(
        RuntimeError, match=r"\[linalg_svd\] matrix 1 of the batch \(2 x 2\) holds NaN"
    ):
        flow.linalg.svd(a)
