"""Tier (b): the LAPACK-backed linalg ops (LU, triangular solve, Cholesky, QR, eigh) and the
composites over them (inv, solve, det, slogdet, lstsq, lu_solve, cholesky_solve, ...) against
PyTorch in float64: forward outputs and the gradients of every input, batched; the info and the
errors of singular or non-positive-definite inputs; shapes on the meta device; one nn.Graph run;
the batch-split SBP rule. The GPU tier at the end runs the cuSOLVER kernels against the CPU's."""

import numpy as np
import pytest
import torch
from _check import rng
from test_cuda import needs_gpu

import oneflowlike as flow

torch.set_num_threads(1)


def _a(shape, seed=0):
    return rng(seed).standard_normal(shape)


def _pd(n, batch=(), seed=0):
    x = _a((*batch, n, n), seed)
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def _tri(n, batch=(), upper=False, seed=0):
    x = _a((*batch, n, n), seed) + 3 * np.eye(n)
    return np.triu(x) if upper else np.tril(x)


def _sym(n, batch=(), seed=0):
    x = _a((*batch, n, n), seed)
    return x + np.swapaxes(x, -1, -2)


def _outs(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _run(lib, fn, arrays, grad):
    xs = [lib.tensor(a) if lib is flow else torch.from_numpy(a.copy()) for a in arrays]
    if grad:
        xs = [x.requires_grad_() for x in xs]
    outs = _outs(fn(lib, *xs))
    return xs, outs


def _check(fn, arrays, grad=True, atol=1e-9, loss=None):
    """fn(lib, *tensors) in flow and in torch: equal outputs, and equal input gradients of a
    random weighting of the floating outputs (or of loss(lib, outputs))."""
    fx, fo = _run(flow, fn, arrays, grad)
    tx, to = _run(torch, fn, arrays, grad)
    assert len(fo) == len(to)
    for f, t in zip(fo, to):
        assert tuple(f.shape) == tuple(t.shape)
        if loss is None:
            np.testing.assert_allclose(f.detach().numpy(), t.detach().numpy(), atol=atol, rtol=1e-7)
    if not grad:
        return
    if loss is None:
        ws = [_a(tuple(t.shape), seed=99 + i) for i, t in enumerate(to)]

        def loss(lib, outs):
            total = 0
            for o, w in zip(outs, ws):
                if o.is_floating_point() and o.requires_grad:
                    total = (
                        total + (o * (lib.tensor(w) if lib is flow else torch.from_numpy(w))).sum()
                    )
            return total

    loss(flow, fo).backward()
    loss(torch, to).backward()
    for f, t in zip(fx, tx):
        np.testing.assert_allclose(f.grad.numpy(), t.grad.numpy(), atol=atol, rtol=1e-6)


L = lambda lib: lib.linalg  # noqa: E731
CASES = {
    "cholesky": (lambda lib, a: L(lib).cholesky(a), [_pd(3, (2,))]),
    "cholesky_upper": (lambda lib, a: L(lib).cholesky(a, upper=True), [_pd(4)]),
    "cholesky_ex": (lambda lib, a: L(lib).cholesky_ex(a), [_pd(3, (2,))]),
    "inv": (lambda lib, a: L(lib).inv(a), [_a((2, 3, 3))]),
    "inv_ex": (lambda lib, a: L(lib).inv_ex(a), [_a((3, 3))]),
    "inverse": (lambda lib, a: lib.inverse(a), [_a((4, 4))]),
    "solve": (lambda lib, a, b: L(lib).solve(a, b), [_a((2, 3, 3)), _a((2, 3, 2), 1)]),
    "solve_vector": (lambda lib, a, b: L(lib).solve(a, b), [_a((2, 3, 3)), _a((2, 3), 1)]),
    "solve_right_bcast": (
        lambda lib, a, b: L(lib).solve(a, b, left=False),
        [_a((3, 3)), _a((2, 4, 3), 1)],
    ),
    "solve_ex": (lambda lib, a, b: L(lib).solve_ex(a, b), [_a((3, 3)), _a((3, 2), 1)]),
    "det": (lambda lib, a: L(lib).det(a), [_a((2, 4, 4))]),
    "det_torch": (lambda lib, a: lib.det(a), [_a((3, 3))]),
    "slogdet": (lambda lib, a: L(lib).slogdet(a), [_a((2, 3, 3))]),
    "logdet": (lambda lib, a: lib.logdet(a), [_pd(3, (2,))]),
    "solve_triangular": (
        lambda lib, a, b: L(lib).solve_triangular(a, b, upper=True),
        [_tri(3, (2,), True), _a((2, 3, 4), 1)],
    ),
    "solve_triangular_right_unit": (
        lambda lib, a, b: L(lib).solve_triangular(
            a, b, upper=False, left=False, unitriangular=True
        ),
        [_tri(3), _a((2, 4, 3), 1)],
    ),
    "triangular_solve": (
        lambda lib, b, a: lib.triangular_solve(b, a, upper=False, transpose=True),
        [_a((2, 3, 2), 1), _tri(3, (2,))],
    ),
    "cholesky_solve": (
        lambda lib, b, l: lib.cholesky_solve(b, l),
        [_a((2, 3, 2), 1), np.linalg.cholesky(_pd(3, (2,)))],
    ),
    "cholesky_solve_upper": (
        lambda lib, b, u: lib.cholesky_solve(b, u, upper=True),
        [_a((3, 2), 1), np.swapaxes(np.linalg.cholesky(_pd(3)), -1, -2).copy()],
    ),
    "cholesky_inverse": (lambda lib, l: lib.cholesky_inverse(l), [np.linalg.cholesky(_pd(3))]),
    "lu_factor": (lambda lib, a: L(lib).lu_factor(a), [_a((2, 4, 4))]),
    "lu_factor_ex_wide": (lambda lib, a: L(lib).lu_factor_ex(a), [_a((2, 3, 5))]),
    "lu_tall": (lambda lib, a: L(lib).lu(a), [_a((2, 5, 3))]),
    "lu_wide": (lambda lib, a: L(lib).lu(a), [_a((3, 4))]),
    "lu_solve": (
        lambda lib, a, b: L(lib).lu_solve(*L(lib).lu_factor(a), b),
        [_a((2, 3, 3)), _a((2, 3, 2), 1)],
    ),
    "lu_solve_adjoint_right": (
        lambda lib, a, b: L(lib).lu_solve(*L(lib).lu_factor(a), b, left=False, adjoint=True),
        [_a((3, 3)), _a((2, 3), 1)],
    ),
    "lu_unpack": (lambda lib, a: lib.lu_unpack(*lib.linalg.lu_factor(a)), [_a((2, 4, 3))]),
    "torch_lu_solve": (
        lambda lib, b, a: lib.lu_solve(b, *lib.linalg.lu_factor(a)),
        [_a((3, 1), 1), _a((3, 3))],
    ),
    "qr_tall": (lambda lib, a: L(lib).qr(a), [_a((2, 5, 3))]),
    "qr_wide": (lambda lib, a: L(lib).qr(a), [_a((3, 5))]),
    "qr_complete": (lambda lib, a: L(lib).qr(a, mode="complete"), [_a((3, 3))]),
    "householder_product": (
        lambda lib, a, t: L(lib).householder_product(a, t),
        [_a((2, 5, 3)), _a((2, 2), 1)],
    ),
    "ormqr": (
        lambda lib, a, t, c: lib.ormqr(a, t, c, left=False, transpose=True),
        [_a((4, 3)), _a((3,), 1), _a((2, 4), 2)],
    ),
    "eigvalsh": (lambda lib, a: L(lib).eigvalsh(a), [_sym(4, (2,))]),
    "lstsq": (lambda lib, a, b: L(lib).lstsq(a, b).solution, [_a((2, 5, 3)), _a((2, 5, 2), 1)]),
    "matrix_power_negative": (lambda lib, a: L(lib).matrix_power(a, -3), [_a((2, 3, 3))]),
    "tensorinv": (lambda lib, a: L(lib).tensorinv(a, ind=1), [_a((6, 2, 3))]),
    "tensorsolve": (lambda lib, a, b: L(lib).tensorsolve(a, b), [_a((2, 3, 6)), _a((2, 3), 1)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_forward_and_gradients_match_torch(name):
    fn, arrays = CASES[name]
    _check(fn, arrays)


def test_eigh_matches_torch_up_to_the_vectors_signs():
    a = _sym(4, (2,))

    def loss(lib, outs):  # V diag(w) V^T and the eigenvalues: independent of the signs
        L_, V = outs
        w = [1.0, -2.0, 0.5, 3.0]
        w = lib.tensor(w) if lib is flow else torch.tensor(w, dtype=torch.float64)
        return ((V * w) @ V.transpose(-2, -1)).sum() + (L_ * L_).sum()

    _check(lambda lib, x: L(lib).eigh(x), [a], loss=loss)
    L_, V = flow.linalg.eigh(flow.tensor(a))
    np.testing.assert_allclose(L_.numpy(), np.linalg.eigvalsh(a), atol=1e-10)
    recon = (V.numpy() * L_.numpy()[..., None, :]) @ np.swapaxes(V.numpy(), -1, -2)
    np.testing.assert_allclose(recon, a, atol=1e-10)


def test_lstsq_outputs_per_driver_and_geqrf_match_torch():
    a, b = _a((4, 2)), _a((4, 3), 1)
    for driver in ("gelsy", "gelsd", "gelss", "gels"):
        _check(lambda lib, x, y: L(lib).lstsq(x, y, driver=driver), [a, b], grad=False)
    _check(lambda lib, x: lib.geqrf(x), [_a((2, 4, 3))], grad=False)
    # (torch's own backward of cond's inverse-based norms fails: forward only)
    _check(lambda lib, x: L(lib).cond(x, "fro"), [_a((2, 3, 3))], grad=False)
    assert flow.tensor(_a((3, 3))).geqrf()[1].shape == (3,)


def test_ldl_factor_and_solve_match_torch():
    a, b = _sym(5, (2,)), _a((5, 3), 1)
    _check(lambda lib, x: L(lib).ldl_factor_ex(x), [a], grad=False)
    _check(lambda lib, x, y: L(lib).ldl_solve(*L(lib).ldl_factor(x), y), [a, b], grad=False)


def test_eig_and_its_gradient_match_torch_up_to_the_vectors_phases():
    a = _a((2, 4, 4), seed=3)
    got, want = flow.linalg.eig(flow.tensor(a)), torch.linalg.eig(torch.from_numpy(a))
    assert got.eigenvalues.dtype == flow.complex128
    np.testing.assert_allclose(got.eigenvalues.numpy(), want.eigenvalues.numpy(), atol=1e-10)
    np.testing.assert_allclose(
        np.abs(got.eigenvectors.numpy()), want.eigenvectors.abs().numpy(), atol=1e-10
    )
    w1, w2, w3 = _a((2, 4, 4), 4), _a((2, 4), 5), _a((2, 4), 6)

    def loss(lib, x):  # |V| and the eigenvalues' parts: independent of the vectors' phases
        L_, V = lib.linalg.eig(x)
        t = lib.tensor if lib is flow else torch.from_numpy
        return (V.abs() * t(w1)).sum() + (L_.real * t(w2)).sum() + (L_.imag * t(w3)).sum()

    x, y = flow.tensor(a).requires_grad_(), torch.from_numpy(a.copy()).requires_grad_()
    loss(flow, x).backward()
    loss(torch, y).backward()
    np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), atol=1e-9)
    w = flow.linalg.eigvals(flow.tensor(a.astype(np.float32)))
    assert w.dtype == flow.complex64
    np.testing.assert_allclose(w.numpy(), want.eigenvalues.numpy(), atol=1e-4)


def test_float32_spot_check():
    a = _a((2, 3, 3)).astype(np.float32)
    got = flow.linalg.inv(flow.tensor(a)).numpy()
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.linalg.inv(a), rtol=1e-4, atol=1e-5)
    x = flow.tensor(_pd(3).astype(np.float32)).requires_grad_()
    flow.linalg.cholesky(x).sum().backward()
    assert x.grad.dtype == flow.float32


def test_singular_and_non_positive_definite_inputs_give_info_or_a_clear_error():
    a = np.zeros((2, 3, 3))
    a[0] = np.eye(3)
    x = flow.tensor(a)
    with pytest.raises(flow.linalg.LinAlgError, match=r"linalg.inv: \(Batch element 1\).*singular"):
        flow.linalg.inv(x)
    with pytest.raises(RuntimeError, match=r"torch.linalg.solve: \(Batch element 1\).*singular"):
        flow.linalg.solve(x, x)
    with pytest.raises(RuntimeError, match=r"lu_factor: \(Batch element 1\): U\[1,1\] is zero"):
        flow.linalg.lu_factor(x)
    with pytest.raises(RuntimeError, match=r"linalg.cholesky: \(Batch element 1\).*positive-def"):
        flow.linalg.cholesky(x)
    with pytest.raises(flow.linalg.LinAlgError, match=r"linalg.inv: The diagonal element 1"):
        flow.inverse(x[1])
    for fn in (flow.linalg.inv_ex, flow.linalg.cholesky_ex, flow.linalg.lu_factor_ex):
        assert fn(x)[-1].tolist() == [0, 1]
    assert flow.linalg.solve_ex(x, x).info.tolist() == [0, 1]
    with pytest.raises(RuntimeError, match=r"cholesky_ex: \(Batch element 1\)"):
        flow.linalg.cholesky_ex(x, check_errors=True)
    assert flow.linalg.det(x).tolist() == [1.0, 0.0]
    sign, logabsdet = flow.linalg.slogdet(x)
    assert sign.tolist() == [1.0, 0.0] and logabsdet.tolist()[1] == -np.inf


def test_out_receives_the_results():
    a = flow.tensor(_pd(3))
    out = flow.empty(3, 3, dtype=flow.float64)
    assert flow.linalg.cholesky(a, out=out) is out
    np.testing.assert_allclose(out.numpy(), np.linalg.cholesky(_pd(3)), atol=1e-12)
    LU, piv = flow.empty(3, 3, dtype=flow.float64), flow.empty(3, dtype=flow.int32)
    res = flow.linalg.lu_factor(a, out=(LU, piv))
    assert res.LU is LU and res.pivots is piv
    with pytest.raises(RuntimeError, match="linalg.inv|inv: out has shape"):
        flow.linalg.inv(a, out=flow.empty(2, 2, dtype=flow.float64))


def test_bad_shapes_raise_naming_the_op():
    with pytest.raises(RuntimeError, match=r"linalg.inv.*square.*3 by 4"):
        flow.linalg.inv(flow.ones(3, 4, dtype=flow.float64))
    with pytest.raises(RuntimeError, match=r"linalg.solve.*Incompatible shapes"):
        flow.linalg.solve(flow.eye(3, dtype=flow.float64), flow.ones(4, 2, dtype=flow.float64))
    with pytest.raises(RuntimeError, match=r"solve_triangular.*incompatible shapes"):
        flow.linalg.solve_triangular(flow.eye(3), flow.ones(2, 2), upper=True)
    with pytest.raises(RuntimeError, match=r"qr.*unrecognized mode 'x'"):
        flow.linalg.qr(flow.ones(3, 3), mode="x")


def test_meta_device_gives_the_shapes():
    a = flow.empty(2, 5, 3, device="meta")
    sq = flow.empty(2, 3, 3, device="meta")
    LU, piv, info = flow.linalg.lu_factor_ex(a)
    assert (tuple(LU.shape), tuple(piv.shape), tuple(info.shape)) == ((2, 5, 3), (2, 3), (2,))
    Q, R = flow.linalg.qr(a)
    assert (tuple(Q.shape), tuple(R.shape)) == ((2, 5, 3), (2, 3, 3))
    assert tuple(flow.linalg.inv(sq).shape) == (2, 3, 3)
    assert tuple(flow.linalg.cholesky(sq).shape) == (2, 3, 3)
    assert tuple(flow.linalg.eigh(sq)[0].shape) == (2, 3)
    assert tuple(flow.linalg.det(sq).shape) == (2,)
    L_, V = flow.linalg.eig(sq)
    assert (L_.dtype, tuple(V.shape)) == (flow.complex64, (2, 3, 3))
    assert flow.linalg.solve(sq, a.transpose(-2, -1)).device.type == "meta"


def test_a_graph_runs_the_solvers_as_eager_does():
    a, b = _pd(3, (2,)), _a((2, 3, 2), 1)

    class Step(flow.nn.Graph):
        def build(self, x, y):
            return flow.linalg.solve(x, y) + flow.linalg.det(x)[
                :, None, None
            ], flow.linalg.cholesky(x)

    got = Step()(flow.tensor(a), flow.tensor(b))
    want = (np.linalg.solve(a, b) + np.linalg.det(a)[:, None, None], np.linalg.cholesky(a))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, atol=1e-10)


def test_batch_dims_may_be_split():
    probe = flow._C.sbp_simulated_global(
        flow.tensor(_a((4, 3, 3))), [4, 3, 3], flow.sbp.broadcast, 0, 2
    )
    op, declared = flow._C.sbp_declared(lambda: flow.linalg.lu_factor_ex(probe))
    assert op == "linalg_lu_factor_ex"
    sigs = {(tuple(s.to_string() for s in i), tuple(s.to_string() for s in o)) for i, o in declared}
    assert (("S(0)",), ("S(0)", "S(0)", "S(0)")) in sigs


@needs_gpu
@pytest.mark.parametrize(
    "name",
    [
        "cholesky",
        "inv",
        "solve",
        "det",
        "lu_tall",
        "qr_tall",
        "qr_wide",
        "solve_triangular",
        "eigvalsh",
        "lu_factor_ex_wide",
    ],
)
def test_cuda_kernels_match_the_cpu(name):
    fn, arrays = CASES[name]
    cpu = _outs(fn(flow, *[flow.tensor(a) for a in arrays]))
    xs = [flow.tensor(a).cuda().requires_grad_() for a in arrays]
    gpu = _outs(fn(flow, *xs))
    for c, g in zip(cpu, gpu):
        np.testing.assert_allclose(g.detach().cpu().numpy(), c.numpy(), atol=1e-8)
    sum(o.sum() for o in gpu if o.is_floating_point()).backward()
    assert all(np.isfinite(x.grad.cpu().numpy()).all() for x in xs)
