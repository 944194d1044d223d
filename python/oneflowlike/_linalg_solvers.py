"""torch.linalg's factorisations and solvers. Five ops of the registry run LAPACK (CPU) or
cuSOLVER (CUDA) kernels and carry PyTorch's backward formulas (ops/linalg_lapack.cpp): LU with
pivots, the triangular solve, Cholesky, QR and the symmetric eigendecomposition. Everything
here composes them (inv = solve(A, I), det from the LU diagonal and the pivots' parity, solve
through lu_factor + lu_solve, ...), so gradients, the meta device, global tensors and nn.Graph
come from those ops."""

import collections
import functools
import math

from . import _C

__all__ = [
    "LinAlgError",
    "cholesky",
    "cholesky_ex",
    "inv",
    "inv_ex",
    "solve",
    "solve_ex",
    "solve_triangular",
    "det",
    "slogdet",
    "lu_factor",
    "lu_factor_ex",
    "lu",
    "lu_solve",
    "qr",
    "eigh",
    "eigvalsh",
    "eig",
    "eigvals",
    "householder_product",
    "lstsq",
    "tensorinv",
    "tensorsolve",
    "ldl_factor",
    "ldl_factor_ex",
    "ldl_solve",
]


class LinAlgError(RuntimeError):
    """An error of a linear-algebra function on an input without the property it needs
    (singular, not positive-definite), as torch.linalg.LinAlgError."""


CholeskyEx = collections.namedtuple("linalg_cholesky_ex", ["L", "info"])
InvEx = collections.namedtuple("linalg_inv_ex", ["inverse", "info"])
SolveEx = collections.namedtuple("linalg_solve_ex", ["result", "info"])
Slogdet = collections.namedtuple("linalg_slogdet", ["sign", "logabsdet"])
LuFactor = collections.namedtuple("linalg_lu_factor", ["LU", "pivots"])
LuFactorEx = collections.namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
Lu = collections.namedtuple("linalg_lu", ["P", "L", "U"])
Qr = collections.namedtuple("linalg_qr", ["Q", "R"])
Eig = collections.namedtuple("linalg_eig", ["eigenvalues", "eigenvectors"])
Eigh = collections.namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
LdlFactor = collections.namedtuple("linalg_ldl_factor", ["LD", "pivots"])
LdlFactorEx = collections.namedtuple("linalg_ldl_factor_ex", ["LD", "pivots", "info"])
Lstsq = collections.namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


def _mT(x):
    return x.transpose(-2, -1)


def _check_matrix(fn, A, name="A", square=True):
    if not isinstance(A, _C.Tensor):
        raise TypeError(f"{fn}: expected {name} to be a Tensor, got {type(A).__name__}")
    if A.dim() < 2:
        raise RuntimeError(
            f"{fn}: The input tensor {name} must have at least 2 dimensions, "
            f"got shape {tuple(A.shape)}"
        )
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"{fn}: {name} must be batches of square matrices, but they are "
            f"{A.shape[-2]} by {A.shape[-1]} matrices"
        )
    if A.dtype not in (_C.dtype.float32, _C.dtype.float64):
        raise RuntimeError(f"{fn}: Expected a floating point tensor as input. Got {A.dtype}")


def _with_out(fn):
    """fn with torch's out= keyword: the results are copied into the given tensors (of the
    results' shapes and dtypes), which are returned."""

    @functools.wraps(fn)
    def wrapper(*args, out=None, **kwargs):
        result = fn(*args, **kwargs)
        if out is None:
            return result
        many = isinstance(result, tuple)
        results, outs = (result, out) if many else ((result,), (out,))
        if not isinstance(outs, (tuple, list)) or len(outs) != len(results):
            raise TypeError(f"{fn.__name__}: out must be {len(results)} tensor(s)")
        for r, o in zip(results, outs):
            if tuple(o.shape) != tuple(r.shape) or o.dtype != r.dtype:
                raise RuntimeError(
                    f"{fn.__name__}: out has shape {tuple(o.shape)} and dtype {o.dtype}, the "
                    f"result has shape {tuple(r.shape)} and dtype {r.dtype}"
                )
            o.copy_(r)
        if not many:
            return out
        return type(result)(*outs) if hasattr(result, "_fields") else tuple(outs)

    return wrapper


def _broadcast_batch(a, b, fn):
    """numpy's broadcast of two batch shapes, naming fn when they do not broadcast."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            raise RuntimeError(f"{fn}: the batch dimensions {a} and {b} do not broadcast")
        out.append(y if x == 1 else x)
    return tuple(reversed(out))


def _infos(info):
    """The info values where they can be read now (not on meta, traced or global tensors)."""
    if info.is_meta or info.is_traced or info.is_global:
        return None
    return [int(v) for v in info.reshape(-1).tolist()]


def _raise_on_info(info, fn, message, error=LinAlgError):
    """Raises `error` naming fn (and the batch element) for the first nonzero info, as
    torch's _linalg_check_errors."""
    values = _infos(info)
    if not values:
        return
    for i, v in enumerate(values):
        if v != 0:
            where = "" if info.dim() == 0 else f": (Batch element {i})"
            raise error(f"{fn}{where}: {message(v)}")


def _singular(v):
    return (
        f"The diagonal element {v} is zero, the inversion could not be completed because the "
        "input matrix is singular."
    )


def _not_pd(v):
    return (
        "The factorization could not be completed because the input is not positive-definite "
        f"(the leading minor of order {v} is not positive-definite)."
    )


def _solver_singular(v):
    return "The solver failed because the input matrix is singular."


def _lu_zero(v):
    return (
        f"U[{v},{v}] is zero and using it on lu_solve would result in a division by zero. If "
        "you still want to perform the factorization, consider calling linalg.lu(A, pivot) or "
        "linalg.lu_factor_ex(A, pivot)"
    )


# --- Cholesky ---


@_with_out
def cholesky_ex(A, *, upper=False, check_errors=False):
    _check_matrix("linalg.cholesky", A)
    L, info = _C.linalg_cholesky_ex(A)
    if check_errors:
        _raise_on_info(info, "linalg.cholesky_ex", _not_pd)
    return CholeskyEx(_mT(L) if upper else L, info)


@_with_out
def cholesky(A, *, upper=False):
    L, info = cholesky_ex(A, upper=upper)
    _raise_on_info(info, "linalg.cholesky", _not_pd)
    return L


# --- LU ---


@_with_out
def lu_factor_ex(A, *, pivot=True, check_errors=False):
    _check_matrix("torch.linalg.lu_factor_ex", A, square=False)
    LU, pivots, info = _C.linalg_lu_factor_ex(A, pivot=pivot)
    if check_errors:
        _raise_on_info(info, "torch.linalg.lu_factor_ex", _lu_zero, RuntimeError)
    return LuFactorEx(LU, pivots, info)


@_with_out
def lu_factor(A, *, pivot=True):
    _check_matrix("torch.linalg.lu_factor", A, square=False)
    LU, pivots, info = _C.linalg_lu_factor_ex(A, pivot=pivot)
    _raise_on_info(info, "torch.linalg.lu_factor", _lu_zero, RuntimeError)
    return LuFactor(LU, pivots)


def _perm_matrix_t(pivots, m, dtype):
    """P^T of P A = L U as a matrix (one-hot rows of the row order LU = A[perm])."""
    perm = _C.lu_permutation(pivots, m)
    cols = _C.arange(m, device=pivots.device)
    return (perm.unsqueeze(-1) == cols).to(dtype)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """P, L, U of lu_factor's packed LU and pivots (torch.lu_unpack)."""
    _check_matrix("lu_unpack", LU_data, "LU_data", square=False)
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    empty = _C.zeros(0, dtype=LU_data.dtype, device=LU_data.device)
    if unpack_data:
        eye = _C.eye(m, k, dtype=LU_data.dtype, device=LU_data.device)
        L = LU_data[..., :, :k].tril(-1) + eye
        U = LU_data[..., :k, :].triu()
    else:
        L = U = empty
    P = _mT(_perm_matrix_t(LU_pivots, m, LU_data.dtype)) if unpack_pivots else empty
    return Lu(P, L, U)


@_with_out
def lu(A, *, pivot=True):
    _check_matrix("linalg.lu", A, square=False)
    LU, pivots, _ = _C.linalg_lu_factor_ex(A, pivot=pivot)
    return lu_unpack(LU, pivots, True, pivot)


@_with_out
def lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """X with A X = B (A^T X = B when adjoint; X A = B when not left) for A = P L U given by
    lu_factor."""
    _check_matrix("linalg.lu_solve", LU, "LU")
    if B.dim() < 2:
        raise RuntimeError(
            f"linalg.lu_solve: The input tensor B must have at least 2 dimensions, "
            f"got shape {tuple(B.shape)}"
        )
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(
            f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
            f"{'AX = B' if left else 'XA = B'} ({tuple(LU.shape)} and {tuple(B.shape)})"
        )
    if not left:
        return _mT(lu_solve(LU, pivots, _mT(B), left=True, adjoint=not adjoint))
    Pt = _perm_matrix_t(pivots, n, LU.dtype)
    if not adjoint:  # X = U^{-1} L^{-1} P^T B
        Y = _C.linalg_solve_triangular(LU, Pt @ B, upper=False, unitriangular=True)
        return _C.linalg_solve_triangular(LU, Y, upper=True)
    # A^T = U^T L^T P^T: X = P L^{-T} U^{-T} B
    Y = _C.linalg_solve_triangular(_mT(LU), B, upper=False)
    Y = _C.linalg_solve_triangular(_mT(LU), Y, upper=True, unitriangular=True)
    return _mT(Pt) @ Y


def _is_vector_rhs(A, B):
    return B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


@_with_out
def solve_ex(A, B, *, left=True, check_errors=False):
    _check_matrix("torch.linalg.solve", A)
    vector = _is_vector_rhs(A, B)
    if vector and not left:
        raise RuntimeError(
            "linalg.solve: Vector broadcasting of the left hand side is not supported for "
            "left=False. In this case linalg.solve is equivalent to B / A.squeeze(-1)"
        )
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.dim() < 2 or (Bm.shape[-2] if left else Bm.shape[-1]) != A.shape[-1]:
        raise RuntimeError(
            f"linalg.solve: Incompatible shapes of A and B for the equation "
            f"{'AX = B' if left else 'XA = B'} ({tuple(A.shape)} and {tuple(B.shape)})"
        )
    if A.dtype != B.dtype:
        raise RuntimeError(
            f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
            f"{A.dtype} and B of type {B.dtype} instead"
        )
    LU, pivots, info = _C.linalg_lu_factor_ex(A)
    if check_errors:
        _raise_on_info(info, "torch.linalg.solve_ex", _solver_singular)
    X = lu_solve(LU, pivots, Bm, left=left)
    return SolveEx(X.squeeze(-1) if vector else X, info)


@_with_out
def solve(A, B, *, left=True):
    X, info = solve_ex(A, B, left=left)
    _raise_on_info(info, "torch.linalg.solve", _solver_singular)
    return X


@_with_out
def inv_ex(A, *, check_errors=False):
    _check_matrix("linalg.inv", A)
    eye = _C.eye(A.shape[-1], dtype=A.dtype, device=A.device)
    LU, pivots, info = _C.linalg_lu_factor_ex(A)
    if check_errors:
        _raise_on_info(info, "linalg.inv_ex", _singular)
    return InvEx(lu_solve(LU, pivots, eye.expand(A.shape)), info)


@_with_out
def inv(A):
    X, info = inv_ex(A)
    _raise_on_info(info, "linalg.inv", _singular)
    return X


@_with_out
def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    return _C.linalg_solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular)


# --- determinants ---


def _lu_sign_and_diag(fn, A):
    _check_matrix(fn, A)
    LU, pivots, _ = _C.linalg_lu_factor_ex(A)
    n = A.shape[-1]
    steps = _C.arange(1, n + 1, device=A.device).to(pivots.dtype)
    swaps = (pivots != steps).to(A.dtype).sum(-1)
    sign = 1 - 2 * (swaps.remainder(2))  # (-1)^swaps
    return sign, LU.diagonal(0, -2, -1)


@_with_out
def det(A):
    sign, diag = _lu_sign_and_diag("linalg.det", A)
    return sign * diag.prod(-1)


@_with_out
def slogdet(A):
    sign, diag = _lu_sign_and_diag("linalg.slogdet", A)
    return Slogdet(sign * diag.sign().prod(-1), diag.abs().log().sum(-1))


# --- QR and eigh ---


@_with_out
def qr(A, mode="reduced"):
    _check_matrix("linalg.qr", A, square=False)
    Q, R = _C.linalg_qr(A, mode)
    return Qr(Q, R)


@_with_out
def eigh(A, UPLO="L"):
    _check_matrix("linalg.eigh", A)
    L, V = _C.linalg_eigh(A, UPLO)
    return Eigh(L, V)


@_with_out
def eigvalsh(A, UPLO="L"):
    _check_matrix("linalg.eigvalsh", A)
    return _C.linalg_eigh(A, UPLO)[0]


@_with_out
def eig(A):
    """The eigenvalues and unit right eigenvectors of a general real matrix (LAPACK geev), as
    complex64 (float32) or complex128 (float64)."""
    _check_matrix("linalg.eig", A)
    L, V = _C.linalg_eig(A)
    return Eig(L, V)


@_with_out
def eigvals(A):
    _check_matrix("linalg.eigvals", A)
    return _C.linalg_eig(A)[0]


def _householder_apply(A, tau, C, transpose=False):
    """H_1 ... H_k C (H_k ... H_1 C when transpose) for the reflectors H_i = I - tau_i v_i v_i^T,
    v_i = (0, ..., 0, 1, A[i+1:, i]), one rank-1 update per reflector."""
    m, k = A.shape[-2], tau.shape[-1]
    rows = _C.arange(m, device=A.device)
    order = range(k) if transpose else reversed(range(k))
    for i in order:
        v = _C.where(rows > i, A[..., :, i], (rows == i).to(A.dtype)).unsqueeze(-1)
        C = C - (tau[..., i : i + 1].unsqueeze(-1) * v) @ (_mT(v) @ C)
    return C


@_with_out
def householder_product(A, tau):
    _check_matrix("torch.linalg.householder_product", A, square=False)
    m, n, k = A.shape[-2], A.shape[-1], tau.shape[-1]
    if m < n:
        raise RuntimeError(
            "torch.linalg.householder_product: input.shape[-2] must be greater than or equal "
            "to input.shape[-1]"
        )
    if n < k:
        raise RuntimeError(
            "torch.linalg.householder_product: input.shape[-1] must be greater than or equal "
            "to tau.shape[-1]"
        )
    if A.dim() - tau.dim() != 1 or tuple(A.shape[:-2]) != tuple(tau.shape[:-1]):
        raise RuntimeError(
            "torch.linalg.householder_product: Expected batch dimensions of tau to be equal to "
            f"input.shape[:-2], but got {tuple(tau.shape[:-1])}"
        )
    eye = _C.eye(m, n, dtype=A.dtype, device=A.device).expand(A.shape)
    if k == 0:  # no reflector: the identity, still an output of A (a zero gradient)
        return _C.where(_C.zeros((), dtype=_C.dtype.bool, device=A.device), A, eye)
    return _householder_apply(A, tau, eye)


# --- least squares and tensor equations ---


def lstsq(A, B, rcond=None, *, driver=None):
    """Least squares: through QR for full-rank inputs, through the pseudo-inverse (the SVD's
    minimum-norm solution, as LAPACK's gelsy/gelsd/gelss give) otherwise; residuals, rank and
    singular values as torch's driver returns them."""
    _check_matrix("torch.linalg.lstsq", A, square=False)
    drivers = ("gels", "gelsy", "gelsd", "gelss")
    driver = driver or "gelsy"
    if driver not in drivers:
        raise RuntimeError(
            f"torch.linalg.lstsq: parameter `driver` should be one of {drivers}, "
            f"but got {driver}"
        )
    if A.dtype != B.dtype:
        raise RuntimeError(
            f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
            f"input's dtype {A.dtype} and other's dtype {B.dtype}"
        )
    vector = B.dim() == A.dim() - 1
    Bm = B.unsqueeze(-1) if vector else B
    m, n = A.shape[-2], A.shape[-1]
    if Bm.dim() < 2 or Bm.shape[-2] != m:
        raise RuntimeError(
            f"torch.linalg.lstsq: input.size(-2) should match other.size(-2), got "
            f"{tuple(A.shape)} and {tuple(B.shape)}"
        )
    eps = 1.1920928955078125e-07 if A.dtype == _C.dtype.float32 else 2.220446049250313e-16
    rtol = eps * max(m, n) if rcond is None or rcond < 0 else rcond
    U, S, Vh = _C.linalg_svd(A, False)
    # Empty outputs as 0-element views of the inputs: outputs of the op, as torch's are.
    empty = A.reshape(-1)[:0] + Bm.reshape(-1)[:0]
    if min(m, n) > 0:
        tol = S[..., :1] * rtol
        keep = S > tol
        S_inv = _C.where(keep, 1 / _C.where(keep, S, _C.ones_like(S)), _C.zeros_like(S))
        rank = keep.to(_C.dtype.int64).sum(-1)
    else:
        S_inv = S
        rank = _C.zeros(tuple(A.shape[:-2]), dtype=_C.dtype.int64, device=A.device)
    ranks = _infos(rank)
    if min(m, n) > 0 and (ranks is None or all(r == min(m, n) for r in ranks)):
        # Full rank: through QR, whose gradient stays accurate where the SVD's divides by
        # close singular values (tall: R^{-1} Q^T B; wide, the minimum norm: Q R^{-T} B of A^T).
        if m >= n:
            Q, R = _C.linalg_qr(A, "reduced")
            X = _C.linalg_solve_triangular(R, _mT(Q) @ Bm, upper=True)
        else:
            Q, R = _C.linalg_qr(_mT(A), "reduced")
            X = Q @ _C.linalg_solve_triangular(_mT(R), Bm, upper=False)
    else:  # rank-deficient: the pseudo-inverse's minimum-norm solution
        X = (_mT(Vh) * S_inv.unsqueeze(-2)) @ (_mT(U) @ Bm)
    full_rank = driver == "gels" or (ranks is not None and all(r == n for r in ranks))
    if driver != "gelsy" and m > n and full_rank:
        residuals = ((A @ X - Bm) ** 2).sum(-2)
        if vector:
            residuals = residuals.squeeze(-1)
    else:
        residuals = empty
    rank = _C.zeros(0, dtype=_C.dtype.int64, device=A.device) if driver == "gels" else rank
    sv = S if driver in ("gelsd", "gelss") else empty
    return Lstsq(X.squeeze(-1) if vector else X, residuals, rank, sv)


@_with_out
def tensorinv(A, ind=2):
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    shape_out, shape_in = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    rows, cols = math.prod(shape_out), math.prod(shape_in)
    if rows != cols:
        raise RuntimeError(
            "Expected self to satisfy the requirement prod(self.shape[ind:]) == "
            f"prod(self.shape[:ind]), but got {cols} != {rows}"
        )
    return inv(A.reshape(rows, cols)).reshape(shape_in + shape_out)


@_with_out
def tensorsolve(A, B, dims=None):
    if dims is not None:
        dims = [d % A.dim() for d in dims]
        rest = [d for d in range(A.dim()) if d not in dims]
        A = A.permute(rest + dims)
    result_shape = tuple(A.shape[B.dim() :])
    rows, cols = B.numel(), math.prod(result_shape)
    if rows != cols:
        raise RuntimeError(
            "Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
            f"prod(self.shape[:other.ndim]), but got {cols} != {rows}"
        )
    return solve(A.reshape(rows, cols), B.reshape(rows)).reshape(result_shape)


# --- the symmetric indefinite factorisation ---


@_with_out
def ldl_factor_ex(A, *, hermitian=False, check_errors=False):
    """L D L^T with Bunch-Kaufman pivoting (LAPACK sytrf) in LAPACK's compact form; for real
    matrices hermitian changes nothing. info > 0 marks an exactly singular D (the factorisation
    itself completes)."""
    _check_matrix("torch.linalg.ldl_factor_ex", A)
    LD, pivots, info = _C.linalg_ldl_factor_ex(A)
    return LdlFactorEx(LD, pivots, info)


@_with_out
def ldl_factor(A, *, hermitian=False):
    _check_matrix("torch.linalg.ldl_factor", A)
    LD, pivots, _ = _C.linalg_ldl_factor_ex(A)
    return LdlFactor(LD, pivots)


@_with_out
def ldl_solve(LD, pivots, B, *, hermitian=False):
    _check_matrix("torch.linalg.ldl_solve", LD, "LD")
    if B.dim() < 2:
        raise RuntimeError(
            "torch.linalg.ldl_solve: Expected B to have at least 2 dimensions, but it has "
            f"{B.dim()} dimensions instead"
        )
    batch = _broadcast_batch(tuple(LD.shape[:-2]), tuple(B.shape[:-2]), "torch.linalg.ldl_solve")
    n = LD.shape[-1]
    LD = LD.expand(batch + (n, n))
    pivots = pivots.expand(batch + (n,))
    B = B.expand(batch + tuple(B.shape[-2:]))
    return _C.linalg_ldl_solve(LD, pivots, B)
