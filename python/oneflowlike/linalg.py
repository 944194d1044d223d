"""flow.linalg: torch.linalg's names. svd, svdvals and pinv are ops of the registry
(ops/svd.cpp, LAPACK/cuSOLVER with a backward); the rest are composites of registry ops, so they
get autograd, the meta device, global tensors and nn.Graph from the ops they call. inv, solve,
det, cholesky, qr, eigh, lu and the other solvers come from _linalg_solvers (LAPACK ops)."""

import math
import numbers

from . import _C
from ._dtype_info import finfo
from .autograd.grad_mode import no_grad
from . import _linalg_solvers as _ls
from ._linalg_solvers import *  # noqa: F401,F403
from ._linalg_solvers import __all__ as _solver_names

matmul = _C.matmul
svd = _C.linalg_svd
svdvals = _C.linalg_svdvals
pinv = _C.linalg_pinv

__all__ = [
    "matmul",
    "svd",
    "svdvals",
    "pinv",
    "vector_norm",
    "matrix_norm",
    "norm",
    "cond",
    "matrix_rank",
    "matrix_power",
    "multi_dot",
    "vecdot",
    "cross",
    "diagonal",
    "vander",
    "matrix_exp",
] + list(_solver_names)

_INF = float("inf")
_TORCH_NAMES = {
    "float32": "Float",
    "float64": "Double",
    "float16": "Half",
    "bfloat16": "BFloat16",
    "int64": "Long",
    "int32": "Int",
    "int8": "Char",
    "uint8": "Byte",
    "bool": "Bool",
    "complex64": "ComplexFloat",
}


def _tname(dtype):
    """The scalar-type name torch prints in its messages (Float, Double, Long, ...)."""
    name = str(dtype).rsplit(".", 1)[-1]
    return _TORCH_NAMES.get(name, name)


def _cname(dtype):
    """The C type name torch prints in some messages (float, double, ...)."""
    name = str(dtype).rsplit(".", 1)[-1]
    return {"float32": "float", "float64": "double", "int64": "long int"}.get(name, name)


def _is_complex(dtype):
    return str(dtype).rsplit(".", 1)[-1].startswith("complex")


def _canonical_dims(dims, ndim, fn):
    ndim_ = max(ndim, 1)
    out = []
    for d in dims:
        if not -ndim_ <= d < ndim_:
            raise IndexError(
                f"{fn}: Dimension out of range (expected to be in range of "
                f"[{-ndim_}, {ndim_ - 1}], but got {d})"
            )
        d %= ndim_
        if d in out:
            raise RuntimeError(f"{fn}: dim {d} appears multiple times in the list of dims")
        out.append(d)
    return out


def _check_floating(x, fn):
    if not (x.dtype.is_floating_point or _is_complex(x.dtype)):
        raise NotImplementedError(
            f"{fn}: Expected a floating point or complex tensor as input. Got {_tname(x.dtype)}"
        )


def _check_matrix(A, fn, name="A", square=False):
    if A.dim() < 2:
        raise RuntimeError(f"{fn}: The input tensor {name} must have at least 2 dimensions.")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"{fn}: {name} must be batches of square matrices, but they are "
            f"{A.shape[-2]} by {A.shape[-1]} matrices"
        )


def _check_norm_dtype(dtype, x_dtype, fn):
    if dtype is None:
        return
    if not (dtype.is_floating_point or _is_complex(dtype)):
        raise RuntimeError(
            f"{fn}: dtype should be floating point or complex, but got {_tname(dtype)}"
        )
    if _is_complex(dtype) != _is_complex(x_dtype):
        kind = "complex" if _is_complex(x_dtype) else "real"
        raise RuntimeError(f"{fn}: dtype should be {kind} for {kind} inputs. Got {_tname(dtype)}")
    if _C.promote_types(dtype, x_dtype) != dtype:
        raise RuntimeError(
            f"{fn}: the dtype of the input ({_tname(x_dtype)}) should be convertible without "
            f"narrowing to the specified dtype ({_tname(dtype)})"
        )


def _root(s, p):
    """s ** (1 / p) with torch's zero subgradient where s == 0 (the double where keeps the
    unselected branch finite, so no 0 * inf reaches the gradient)."""
    pos = s > 0
    safe = _C.where(pos, s, 1.0)
    return _C.where(pos, _C.sqrt(safe) if p == 2 else _C.pow(safe, 1.0 / p), 0.0)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.vector_norm: the ord-norm of x over dim (every element when dim is None)."""
    fn = "linalg.vector_norm"
    _check_floating(x, fn)
    _check_norm_dtype(dtype, x.dtype, fn)
    if isinstance(dim, numbers.Integral):
        dim = [int(dim)]
    dims = None if dim is None or len(dim) == 0 else _canonical_dims(dim, x.dim(), fn)
    if ord < 0 or ord == _INF:
        if x.numel() == 0 and dims is None:
            raise RuntimeError(
                f"{fn} cannot compute the {ord} norm on an empty tensor because the operation "
                "does not have an identity"
            )
        for d in dims or []:
            if x.dim() and x.shape[d] == 0:
                raise RuntimeError(
                    f"{fn} cannot compute the {ord} norm on the dimension {d} because this "
                    "dimension is empty and the operation does not have an identity"
                )
    if dtype is not None:
        x = x.to(dtype)
    if _is_complex(x.dtype):
        x = x.abs()
    if ord == 0:
        count = _C.sum(x != 0, dims, keepdim, dtype=x.dtype)
        if not x.requires_grad:
            return count
        # torch's result is differentiable with a zero gradient; an all-false where gives it
        zero = _C.where(_C.zeros_like(x).to(_C.dtype.bool), x, 0.0)
        return count + _C.sum(zero, dims, keepdim)
    if ord == _INF:
        return _C.amax(x.abs(), dims, keepdim)
    if ord == -_INF:
        return _C.amin(x.abs(), dims, keepdim)
    if ord == 1:
        return _C.sum(x.abs(), dims, keepdim)
    if ord == 2:
        return _root(_C.sum(x * x, dims, keepdim), 2)
    # |x|^p through a safe base, so that zeros get torch's zero subgradient (not 0 * inf)
    a = x.abs()
    nonzero = a > 0
    powered = _C.pow(_C.where(nonzero, a, 1.0), float(ord))
    powered = _C.where(nonzero, powered, 0.0 if ord > 0 else _INF)
    return _root(_C.sum(powered, dims, keepdim), float(ord))


def _to_back(A, d0, d1):
    """A with dims d0, d1 moved last, and the permutation that undoes it."""
    perm = [i for i in range(A.dim()) if i not in (d0, d1)] + [d0, d1]
    inv = [perm.index(i) for i in range(A.dim())]
    return A.permute(perm), inv


def _reduce_or_zeros(x, d, ord, keepdim):
    """amax (ord > 0) or amin over d; an empty dim gives 0 for amax as torch does."""
    if x.shape[d] == 0 and ord > 0:
        shape = list(x.shape)
        if keepdim:
            shape[d] = 1
        else:
            del shape[d]
        return _C.zeros(shape, dtype=x.dtype, device=x.device)
    return (_C.amax if ord > 0 else _C.amin)(x, [d], keepdim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """torch.linalg.matrix_norm: 'fro', 'nuc', inf, -inf, 1, -1, 2, -2 (2, -2 and 'nuc' through
    the singular values)."""
    fn = "linalg.matrix_norm"
    _check_matrix(A, fn)
    if isinstance(dim, numbers.Integral):
        raise RuntimeError(f"{fn}: dim must be a 2-tuple. Got {dim}")
    dim = [_canonical_dims([d], A.dim(), fn)[0] for d in dim]
    if len(dim) != 2:
        raise RuntimeError(f"{fn}: dim must be a 2-tuple. Got {tuple(dim)}")
    if dim[0] == dim[1]:
        raise RuntimeError(f"{fn}: dims must be different. Got ({dim[0]}, {dim[1]})")
    _check_norm_dtype(dtype, A.dtype, fn)
    _check_floating(A, fn)
    if isinstance(ord, str):
        if ord not in ("fro", "nuc"):
            raise RuntimeError(f"{fn}: Order {ord} not supported.")
        if ord == "fro":
            return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    elif abs(ord) not in (1, 2, _INF):
        raise RuntimeError(f"{fn}: Order {ord} not supported.")
    if ord == "nuc" or abs(ord) == 2:
        if dtype is not None:
            A = A.to(dtype)
        moved, inv = _to_back(A, dim[0], dim[1])
        s = svdvals(moved)
        if ord == "nuc":
            result = _C.sum(s, [-1], keepdim)
        else:
            result = _reduce_or_zeros(s, s.dim() - 1, ord, keepdim)
        if keepdim:
            result = result.unsqueeze(-1).permute(inv)
        return result
    d0, d1 = dim
    if abs(ord) == _INF:
        d0, d1 = d1, d0
    if not keepdim and d0 < d1:
        d1 -= 1
    return _reduce_or_zeros(vector_norm(A, 1, d0, keepdim, dtype=dtype), d1, ord, keepdim)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.norm: a matrix norm when ord is given and dim names two dims (or A is 2-d),
    a vector norm otherwise."""
    if dim is not None:
        if isinstance(dim, numbers.Integral):
            dim = (int(dim),)
        if len(dim) not in (1, 2):
            raise RuntimeError(
                f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dim)}"
            )
    elif ord is not None and A.dim() not in (1, 2):
        raise RuntimeError(
            "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
            f"Got {A.dim()}D."
        )
    if ord is not None and ((dim is not None and len(dim) == 2) or (dim is None and A.dim() == 2)):
        return matrix_norm(A, ord, (0, 1) if dim is None else dim, keepdim, dtype=dtype)
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def cond(A, p=None):
    """torch.linalg.cond: ratios of singular values for p = None, 2 and -2; for the other norms
    norm(A, p) * norm(inv(A), p)."""
    _check_matrix(A, "linalg.cond")
    if p in (None, 2, -2):
        s = svdvals(A)
        big, small = s[..., 0], s[..., -1]
        return small / big if p == -2 else big / small
    if p in ("fro", "nuc", _INF, -_INF, 1, -1):
        if A.shape[-1] != A.shape[-2]:
            raise RuntimeError(
                f"linalg.cond(ord={p}): A must be batches of square matrices, but they are "
                f"{A.shape[-2]} by {A.shape[-1]} matrices"
            )
        return matrix_norm(A, p) * matrix_norm(_ls.inv(A), p)
    raise ValueError(f"linalg.cond got an invalid norm type: {p}")


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, tol=None):
    """torch.linalg.matrix_rank: the number of singular values above max(atol, rtol * s_max).
    rtol defaults to eps * max(m, n) unless a positive atol is given; tol is the legacy atol.
    hermitian=True reads only the lower triangle, as torch's eigvalsh path does."""
    fn = "torch.linalg.matrix_rank"
    _check_matrix(A, fn, name="input")
    _check_floating(A, fn)
    if tol is not None:
        if atol is not None or rtol is not None:
            raise RuntimeError(f"{fn}: tol cannot be given together with atol or rtol")
        atol, rtol = tol, 0.0
    if hermitian:
        A = _C.tril(A) + _C.tril(A, -1).mT.conj()
    s = svdvals(A)
    default_rtol = finfo(s.dtype).eps * max(A.shape[-2], A.shape[-1])
    atol_t = _as_tensor(0.0 if atol is None else atol, s)
    if rtol is not None:
        rtol_t = _as_tensor(rtol, s)
    elif atol is None:
        rtol_t = _as_tensor(default_rtol, s)
    else:
        rtol_t = _C.where(atol_t > 0, 0.0, default_rtol)
    s_max = _C.amax(s, [-1], True) if s.shape[-1] else _C.zeros_like(s[..., :1])
    tol_t = _C.maximum(atol_t.unsqueeze(-1), rtol_t.unsqueeze(-1) * s_max)
    return _C.sum(s > tol_t, [-1], False, dtype=_C.dtype.int64)


def _as_tensor(v, like):
    if isinstance(v, _C.Tensor):
        return v.to(like.dtype)
    return _C.full([], float(v), dtype=like.dtype, device=like.device)


def _eye_like(A):
    n = A.shape[-1]
    return _C.eye(n, dtype=A.dtype, device=A.device).expand(*A.shape).contiguous()


def matrix_power(A, n):
    """torch.linalg.matrix_power by repeated squaring (of inv(A) for n < 0)."""
    fn = "linalg.matrix_power"
    _check_matrix(A, fn, square=True)
    if not isinstance(n, numbers.Integral):
        raise TypeError(f"{fn}: n must be an int, got {type(n).__name__}")
    if n < 0:
        A, n = _ls.inv(A), -n
    if n == 0:  # the identity, differentiable (zero gradient) as torch's
        return _C.where(_C.zeros_like(A).to(_C.dtype.bool), A, _eye_like(A))
    result, base = None, A
    while True:
        if n & 1:
            result = base if result is None else _C.matmul(result, base)
        n >>= 1
        if not n:
            return result.clone() if result is A else result
        base = _C.matmul(base, base)


def _chain_order(dims):
    """The classic O(n^3) dynamic program for the cheapest parenthesisation of a chain whose
    i-th matrix is dims[i] x dims[i+1]; returns split[i][j]."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _multiply_chain(mats, split, i, j):
    if i == j:
        return mats[i]
    k = split[i][j]
    return _C.mm(_multiply_chain(mats, split, i, k), _multiply_chain(mats, split, k + 1, j))


def multi_dot(tensors):
    """torch.linalg.multi_dot: the product of a chain of matrices in the cheapest order; the
    first may be a row vector and the last a column vector (1-d)."""
    fn = "multi_dot()"
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"{fn}: expected at least 2 tensors but got {n}")
    mats = list(tensors)
    first_1d, last_1d = mats[0].dim() == 1, mats[-1].dim() == 1
    for i, t in enumerate(mats):
        if i in (0, n - 1) and t.dim() not in (1, 2):
            which = "first" if i == 0 else "last"
            raise RuntimeError(f"{fn}: the {which} tensor must be 1D or 2D but got {t.dim()}D")
        if 0 < i < n - 1 and t.dim() != 2:
            raise RuntimeError(f"{fn}: tensor {i} must be 2D but got {t.dim()}D")
        if t.dtype != mats[0].dtype:
            raise RuntimeError(
                f"{fn}: all tensors must have be the same dtype but tensor 0 is "
                f"{_cname(mats[0].dtype)} and tensor {i} {_cname(t.dtype)}"
            )
    if first_1d:
        mats[0] = mats[0].unsqueeze(0)
    if last_1d:
        mats[-1] = mats[-1].unsqueeze(-1)
    for i in range(n - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(
                f"{fn}: tensors {i} and {i + 1} with shapes {list(tensors[i].shape)} and "
                f"{list(tensors[i + 1].shape)} cannot be multiplied"
            )
    dims = [m.shape[0] for m in mats] + [mats[-1].shape[1]]
    result = _multiply_chain(mats, _chain_order(dims), 0, n - 1)
    if first_1d:
        result = result.squeeze(0)
    if last_1d:
        result = result.squeeze(-1)
    return result


def vecdot(x, y, *, dim=-1):
    """torch.linalg.vecdot: sum(conj(x) * y) over dim, with broadcasting."""
    if x.dtype != y.dtype:
        raise RuntimeError(
            "linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
            f"{_tname(x.dtype)} and y of type {_tname(y.dtype)} instead"
        )
    return _C.sum(x.conj() * y, [dim])


def cross(input, other, *, dim=-1):
    """torch.linalg.cross: torch.cross (the registry op) with dim=-1 and equal ranks required."""
    if input.dim() != other.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    return _C.cross(input, other, dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """torch.linalg.diagonal: torch.diagonal (the registry op) with the last two dims as default."""
    return _C.diagonal(A, offset, dim1, dim2)


def _cumprod(x, dim):
    """cumprod along dim: the registry op when there is one, else the product of a triangular
    (n, n) spread of x, which keeps the exact gradient where x has zeros."""
    op = getattr(_C, "cumprod", None)
    if op is not None:
        return op(x, dim)
    dim %= x.dim()
    moved = x.movedim(dim, -1)
    n = moved.shape[-1]
    lower = _C.tril(_C.ones([n, n], dtype=_C.dtype.bool, device=x.device))
    spread = _C.where(lower, moved.unsqueeze(-2), 1)
    return _C.prod(spread, [-1]).movedim(-1, dim)


def vander(x, *, N=None):
    """torch.linalg.vander: the powers x^0 .. x^(N-1) along a new last dim."""
    if x.dim() == 0:
        x = x.reshape([1])
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    column = x.unsqueeze(-1)
    spread = _C.cat([_C.ones_like(column), column.expand(*x.shape, n - 1)], -1)
    return _cumprod(spread, -1)


def _taylor_exp(X, degree):
    """The degree-m Taylor polynomial of exp at X, by Paterson-Stockmeyer: about 2 sqrt(m)
    matmuls instead of m."""
    q = max(2, math.ceil(math.sqrt(degree + 1)))
    powers = [_eye_like(X), X]
    for _ in range(2, q + 1):
        powers.append(_C.matmul(powers[-1], X))
    coeff = [1.0 / math.factorial(k) for k in range(degree + 1)]

    def block(j):
        terms = [powers[i] * coeff[j * q + i] for i in range(q) if j * q + i <= degree]
        return sum(terms[1:], terms[0])

    blocks = math.ceil((degree + 1) / q)
    result = block(blocks - 1)
    for j in range(blocks - 2, -1, -1):
        result = _C.matmul(result, powers[q]) + block(j)
    return result


def matrix_exp(A):
    """torch.linalg.matrix_exp by scaling and squaring: each matrix is scaled by 2^-s to 1-norm
    <= 1, its Taylor polynomial (degree 18 in float64, 10 below) taken, then squared s times."""
    fn = "linalg.matrix_exp"
    _check_matrix(A, fn, square=True)
    _check_floating(A, fn)
    if A.shape[-1] == 1:
        return _C.exp(A)
    if A.numel() == 0:
        return A.clone()
    degree = 18 if A.dtype == _C.dtype.float64 else 10
    with no_grad():
        norm1 = _C.amax(_C.sum(A.abs(), [-2]), [-1])
        s = _C.clamp(_C.ceil(_C.log(norm1) / math.log(2.0)), 0.0)
        s = _C.where(_C.isfinite(s), s, 0.0)
        if A.is_meta:
            squarings = 0  # shapes only: the count does not change them
        elif A.is_traced:
            raise NotImplementedError(
                f"{fn} under nn.Graph: the number of squarings depends on the values of A; "
                "it needs a kernel (or call it outside the graph)"
            )
        else:
            squarings = int(_C.amax(s).item())
    X = A * _C.pow(2.0, -s).unsqueeze(-1).unsqueeze(-1)
    X = _taylor_exp(X, degree)
    for k in range(squarings):
        X = _C.where((s > k).unsqueeze(-1).unsqueeze(-1), _C.matmul(X, X), X)
    return X


# torch-level names (torch.norm, torch.renorm, ...) that the op registry does not define;
# oneflowlike/__init__.py imports them.


def _torch_norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """torch.norm: the Frobenius or p vector norm, or a matrix norm for p='nuc' (or 'fro' over
    more than 2 dims)."""
    if out is not None:
        raise TypeError("norm: out= is not supported by oneflowlike")
    dims = [dim] if isinstance(dim, numbers.Integral) else dim
    if isinstance(p, str):
        if p == "fro" and (dim is None or isinstance(dim, numbers.Integral) or len(dim) <= 2):
            return vector_norm(input, 2, dims, keepdim, dtype=dtype)
        if dims is None:
            dims = list(range(input.dim()))
        return matrix_norm(input, p, dims, keepdim, dtype=dtype)
    return vector_norm(input, 2.0 if p is None else p, dims, keepdim, dtype=dtype)


def renorm(input, p, dim, maxnorm):
    """torch.renorm: each slice along dim whose p-norm exceeds maxnorm is scaled to maxnorm."""
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.dim() <= 1:
        raise RuntimeError(
            f"renorm: input needs at least 2 dimensions, got {input.dim()} dimensions"
        )
    (dim,) = _canonical_dims([dim], input.dim(), "renorm")
    others = [d for d in range(input.dim()) if d != dim]
    norms = vector_norm(input, p, others, True)
    factor = _C.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return input * factor


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """torch.cdist: the p-norm distance between each row of x1 (.., P, M) and of x2 (.., R, M).
    For p=2 with more than 25 rows (or when asked) it uses torch's matmul expansion."""
    modes = (
        "use_mm_for_euclid_dist_if_necessary",
        "use_mm_for_euclid_dist",
        "donot_use_mm_for_euclid_dist",
    )
    if compute_mode not in modes:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    if x1.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {x2.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} "
            f"X2: {x2.shape[-1]}"
        )
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if not x1.dtype.is_floating_point:
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {_tname(x1.dtype)}")
    batch, _ = _C.broadcast_tensors([x1[..., :1, :1], x2[..., :1, :1]])
    x1 = x1.expand(*batch.shape[:-2], *x1.shape[-2:])
    x2 = x2.expand(*batch.shape[:-2], *x2.shape[-2:])
    rows, cols = x1.shape[-2], x2.shape[-2]
    use_mm = p == 2 and (
        compute_mode == modes[1] or (compute_mode == modes[0] and (rows > 25 or cols > 25))
    )
    if use_mm:
        sq1 = _C.sum(x1 * x1, [-1], True)
        sq2 = _C.sum(x2 * x2, [-1], True)
        left = _C.cat([x1 * -2, sq1, _C.ones_like(sq1)], -1)
        right = _C.cat([x2, _C.ones_like(sq2), sq2], -1)
        return _C.sqrt(_C.clamp(_C.matmul(left, right.mT), 1e-30))
    return vector_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p, -1)


def chain_matmul(*matrices, out=None):
    """torch.chain_matmul (deprecated in torch for linalg.multi_dot): the product of 2-d
    matrices in the cheapest order."""
    if out is not None:
        raise TypeError("chain_matmul: out= is not supported by oneflowlike")
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    if len(matrices) == 1:
        return matrices[0].clone()
    return multi_dot(matrices)


# The torch-level names flow/__init__.py imports; a registry op of the same name wins, so that an
# op added in C++ later is not shadowed by its composite.
_torch_norm.__name__ = _torch_norm.__qualname__ = "norm"
torch_norm = getattr(_C, "norm", _torch_norm)
renorm = getattr(_C, "renorm", renorm)
cdist = getattr(_C, "cdist", cdist)
chain_matmul = getattr(_C, "chain_matmul", chain_matmul)
