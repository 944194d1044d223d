"""The torch namespace's older spellings of the linalg solvers (torch.det, torch.inverse,
torch.lu, torch.triangular_solve, torch.cholesky_solve, ...) and their Tensor methods, over the
composites of _linalg_solvers; plus the randomized low-rank SVD and PCA (svd_lowrank,
pca_lowrank), here computed exactly through the SVD."""

import collections

from . import _C
from . import _linalg_solvers as _ls
from ._linalg_solvers import lu_unpack

__all__ = [
    "det",
    "logdet",
    "slogdet",
    "inverse",
    "cholesky_inverse",
    "cholesky_solve",
    "lu",
    "lu_solve",
    "lu_unpack",
    "triangular_solve",
    "ormqr",
    "orgqr",
    "qr",
    "svd_lowrank",
    "pca_lowrank",
]

TriangularSolve = collections.namedtuple("triangular_solve", ["solution", "cloned_coefficient"])
Slogdet = collections.namedtuple("slogdet", ["sign", "logabsdet"])
Qr = collections.namedtuple("qr", ["Q", "R"])


def _mT(x):
    return x.transpose(-2, -1)


def det(input):
    return _ls.det(input)


def slogdet(input):
    sign, logabsdet = _ls.slogdet(input)
    return Slogdet(sign, logabsdet)


def logdet(input):
    """log(det(A)): nan where the determinant is negative, -inf where it is zero."""
    sign, logabsdet = _ls.slogdet(input)
    nan = _C.full_like(logabsdet, float("nan"))
    return _C.where(sign < 0, nan, logabsdet)


def inverse(input):
    return _ls.inv(input)


def _as_factor(L, upper):
    """L's triangle as the factor's value, with the gradient reaching every entry of L: PyTorch's
    cholesky_solve and cholesky_inverse differentiate (L L^T)^{-1} as a function of all of L."""
    return L - (L.tril(-1) if upper else L.triu(1)).detach()


def _gram(L, upper):
    F = _as_factor(L, upper)
    return _mT(F) @ F if upper else F @ _mT(F)


def cholesky_solve(input, input2, upper=False):
    """X with A X = B for A = L L^T (U^T U when upper) given its Cholesky factor input2."""
    _ls._check_matrix("cholesky_solve", input2, "input2")
    if input.dim() < 2:
        raise RuntimeError(
            "cholesky_solve: b should have at least 2 dimensions, but has "
            f"{input.dim()} dimensions instead"
        )
    return _ls.solve_ex(_gram(input2, upper), input)[0]


def cholesky_inverse(input, upper=False):
    _ls._check_matrix("cholesky_inverse", input, "input")
    values = _ls._infos((input.diagonal(0, -2, -1) == 0).to(_C.dtype.int32).sum(-1))
    for i, v in enumerate(values or []):
        if v:
            where = "" if input.dim() == 2 else f": (Batch element {i})"
            raise _ls.LinAlgError(
                f"cholesky_inverse{where}: The diagonal element is zero, the inversion could "
                "not be completed because the input matrix is singular."
            )
    return _ls.inv_ex(_gram(input, upper))[0]


@_ls._with_out
def lu(A, pivot=True, get_infos=False):
    """torch.lu: the packed LU and pivots (and the infos with get_infos)."""
    LU, pivots, info = _ls.lu_factor_ex(A, pivot=pivot)
    return (LU, pivots, info) if get_infos else (LU, pivots)


@_ls._with_out
def lu_solve(b, LU_data, LU_pivots):
    return _ls.lu_solve(LU_data, LU_pivots, b)


@_ls._with_out
def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    """torch.triangular_solve: X with op(A) X = b, and a copy of A (broadcast to X's batch)."""
    _ls._check_matrix("triangular_solve", A, "A")
    Aop = _mT(A) if transpose else A
    X = _C.linalg_solve_triangular(Aop, b, upper=upper != transpose, unitriangular=unitriangular)
    batch = tuple(X.shape[:-2])
    return TriangularSolve(X, A.expand(batch + tuple(A.shape[-2:])).clone())


@_ls._with_out
def ormqr(input, tau, other, left=True, transpose=False):
    """Q C, Q^T C, C Q or C Q^T for the Q of geqrf's (input, tau), without forming Q."""
    _ls._check_matrix("ormqr", input, "input", square=False)
    if left:
        return _ls._householder_apply(input, tau, other, transpose=transpose)
    return _mT(_ls._householder_apply(input, tau, _mT(other), transpose=not transpose))


def orgqr(input, tau):
    return _ls.householder_product(input, tau)


@_ls._with_out
def qr(input, some=True):
    Q, R = _ls.qr(input, "reduced" if some else "complete")
    return Qr(Q, R)


def svd_lowrank(A, q=6, niter=2, M=None):
    """The rank-q truncated SVD (U, S, V) of A - M. torch draws a randomized range finder;
    this takes the exact SVD's leading q triplets, which the randomized one approximates."""
    _ls._check_matrix("svd_lowrank", A, square=False)
    X = A if M is None else A - M
    q = min(q, X.shape[-2], X.shape[-1])
    U, S, Vh = _C.linalg_svd(X, False)
    return U[..., :q], S[..., :q], _mT(Vh[..., :q, :])


def pca_lowrank(A, q=None, center=True, niter=2):
    _ls._check_matrix("pca_lowrank", A, square=False)
    m, n = A.shape[-2], A.shape[-1]
    q = min(6, m, n) if q is None else q
    if not 0 <= q <= min(m, n):
        raise ValueError(
            f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}"
        )
    X = A - A.mean(-2, keepdim=True) if center else A
    return svd_lowrank(X, q, niter)


def _install_methods():
    methods = {
        "det": det,
        "logdet": logdet,
        "slogdet": slogdet,
        "inverse": inverse,
        "cholesky_inverse": cholesky_inverse,
        "cholesky_solve": cholesky_solve,
        "lu": lu,
        "lu_solve": lu_solve,
        "triangular_solve": triangular_solve,
        "ormqr": ormqr,
        "orgqr": orgqr,
        "qr": qr,
    }
    for name, fn in methods.items():
        setattr(_C.Tensor, name, fn)


_install_methods()
