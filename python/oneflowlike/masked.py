"""flow.masked: torch.masked's reductions and normalizations on strided tensors with a boolean
mask. Masked-out elements are replaced by the operation's identity (0 for sum, 1 for prod, -inf
for amax, ...) before the ordinary op runs, as torch/masked/_ops.py does, so a fully masked slice
gives the identity (or nan where there is none: mean, median, var, std). Composites of registry
ops: autograd, meta, global tensors and nn.Graph come from the ops. MaskedTensor inputs are not
supported."""

from . import _C
from ._dtype_info import iinfo
from .linalg import _cumprod, vector_norm

__all__ = [
    "amax",
    "amin",
    "argmax",
    "argmin",
    "cumprod",
    "cumsum",
    "log_softmax",
    "logaddexp",
    "logsumexp",
    "mean",
    "median",
    "norm",
    "normalize",
    "prod",
    "softmax",
    "softmin",
    "std",
    "sum",
    "var",
]

_INF = float("inf")
_bool, _int64, _float32 = _C.dtype.bool, _C.dtype.int64, _C.dtype.float32
_SMALL_INTS = {_C.dtype.uint8, _C.dtype.bool, _C.dtype.int8, _C.dtype.int32}


def _canonical_dim(dim, ndim):
    """dim as a sorted tuple of non-negative dims; None and () mean every dim."""
    if dim is None or dim == ():
        return tuple(range(ndim))
    ndim = max(ndim, 1)
    dims = []
    for d in (dim,) if isinstance(dim, int) else dim:
        if d in dims:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= ndim or d < -ndim:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
                f"but got {d})"
            )
        dims.append(d % ndim)
    return tuple(sorted(dims))


def _input_mask(input, mask):
    """mask as a bool tensor of input's shape (broadcast)."""
    if mask is None:
        raise ValueError("_input_mask requires explicit mask")
    if tuple(mask.shape) != tuple(input.shape):
        if mask.dim() > input.dim():
            raise IndexError(
                "_input_mask expected broadcastable mask (got mask dimensionality higher than "
                "of the input)"
            )
        mask = _C.broadcast_to(mask, list(input.shape))
    return mask.to(_bool)


def _identity(op, input, ord=2):
    """The value a masked-out element takes for op (torch.masked's _reduction_identity)."""
    floating = input.dtype.is_floating_point
    if op in ("sum", "cumsum"):
        return 0
    if op in ("prod", "cumprod"):
        return 1
    if op in ("amax", "argmax", "logaddexp", "logsumexp"):
        return -_INF if floating else iinfo(input.dtype).min
    if op in ("amin", "argmin"):
        return _INF if floating else iinfo(input.dtype).max
    if op == "norm":
        return _INF if ord == -_INF else 0
    if op == "median":
        return float("nan")
    raise NotImplementedError(f"identity of {op} on {input.dtype} input")


def _combine(op, input, mask, ord=2):
    if mask is None:
        return input
    return _C.where(_input_mask(input, mask), input, _identity(op, input, ord))


def _dims_arg(dims):
    return list(dims) if dims else None


def _sum_dtype(input, dtype):
    if dtype is not None:
        return dtype
    return _int64 if input.dtype in _SMALL_INTS else input.dtype


def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.sum: the sum of the masked-in elements (0 for a fully masked slice)."""
    dtype = _sum_dtype(input, dtype)
    dims = _canonical_dim(dim, input.dim())
    return _C.sum(_combine("sum", input, mask), _dims_arg(dims), bool(keepdim), dtype=dtype)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.prod: the product of the masked-in elements (1 for a fully masked slice)."""
    dtype = _sum_dtype(input, dtype)
    dims = _canonical_dim(dim, input.dim())
    result = _combine("prod", input, mask).to(dtype)
    if not dims:
        return _C.prod(result, None, bool(keepdim))
    for d in reversed(dims):
        result = _C.prod(result, [d], bool(keepdim))
    return result


def cumsum(input, dim, *, dtype=None, mask=None):
    """torch.masked.cumsum: masked-out elements count as 0."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.dim())[0]
    return _C.cumsum(_combine("sum", input, mask), d, dtype=dtype)


def cumprod(input, dim, *, dtype=None, mask=None):
    """torch.masked.cumprod: masked-out elements count as 1."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.dim())[0]
    x = _combine("prod", input, mask).to(dtype)
    return _cumprod(x, d) if x.dim() else x.clone()


def _extremum(op, input, dim, keepdim, dtype, mask):
    dtype = input.dtype if dtype is None else dtype
    x = _combine(op, input, mask)
    dims = _canonical_dim(dim, x.dim())
    return getattr(_C, op)(x, _dims_arg(dims), bool(keepdim)).to(dtype)


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.amax: the largest masked-in element (-inf for a fully masked slice)."""
    return _extremum("amax", input, dim, keepdim, dtype, mask)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.amin: the smallest masked-in element (inf for a fully masked slice)."""
    return _extremum("amin", input, dim, keepdim, dtype, mask)


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.argmax; as in torch, the index is cast to dtype (input's by default)."""
    dtype = input.dtype if dtype is None else dtype
    return _C.argmax(_combine("argmax", input, mask), dim, bool(keepdim)).to(dtype)


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.argmin; as in torch, the index is cast to dtype (input's by default)."""
    dtype = input.dtype if dtype is None else dtype
    return _C.argmin(_combine("argmin", input, mask), dim, bool(keepdim)).to(dtype)


def _check_float_dtype(dtype, given, fn):
    if not dtype.is_floating_point and not str(dtype).endswith(("complex64", "complex128")):
        source = "Optional" if given else "Input"
        raise ValueError(
            f"{fn}(): Could not infer output dtype. {source} dtype must be either a floating "
            f"point or complex dtype. Got: {dtype}"
        )


def _count(input, mask, dim, keepdim):
    """The number of masked-in elements per reduced slice (int64)."""
    if mask is None:
        ones = _C.ones(list(input.shape), dtype=_int64, device=input.device)
        return sum(ones, dim, keepdim=keepdim)
    return sum(_input_mask(input, mask), dim, keepdim=keepdim)


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.mean: nan for a fully masked slice."""
    given = dtype is not None
    dtype = input.dtype if dtype is None else dtype
    _check_float_dtype(dtype, given, "mean")
    total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=mask)
    return total / _count(input, mask, dim, keepdim)


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.median: the lower median of the masked-in, non-nan elements along dim (nan
    for a fully masked slice), as torch's nanmedian; the gradient goes to that element."""
    dtype = input.dtype if dtype is None else dtype
    is_float = input.dtype.is_floating_point
    if not is_float:
        input = input.to(_float32)
    x = input.unsqueeze(0) if input.dim() == 0 else input
    d = _canonical_dim(dim, input.dim())[0]
    valid = ~_C.isnan(x)
    if mask is not None:
        valid = valid & _input_mask(input, mask).reshape(list(x.shape))
    order = _C.sort(_C.where(valid, x, _INF), d, stable=True)[1]
    count = _C.sum(valid, [d], True)
    middle = _C.clamp(_C.floor_divide(count - 1, 2), 0)
    value = _C.gather(x, d, _C.gather(order, d, middle))
    output = _C.where(count > 0, value, float("nan"))
    if not keepdim or input.dim() == 0:
        output = output.squeeze(d)
    if is_float:
        return output
    if not (output.is_meta or output.is_traced) and bool(_C.isnan(output).any().item()):
        raise ValueError(
            "masked median expects no fully masked out rows if dtype is not floating point"
        )
    return output.to(dtype)


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.logsumexp: -inf for a fully masked slice."""
    dtype = input.dtype if dtype is None else dtype
    dims = _canonical_dim(dim, input.dim())
    x = _combine("logsumexp", input, mask)
    return _C.logsumexp(x, list(dims), keepdim).to(dtype)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    """torch.masked.logaddexp: log(exp(input) + exp(other)) with masked-out elements as -inf."""
    dtype = input.dtype if dtype is None else dtype
    a = _combine("logaddexp", input, input_mask)
    b = _combine("logaddexp", other, other_mask)
    return _C.logaddexp(a, b).to(dtype)


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.norm: linalg.vector_norm of the masked-in elements."""
    dtype = input.dtype if dtype is None else dtype
    x = _combine("norm", input, mask, ord)
    return vector_norm(x, ord, list(_canonical_dim(dim, input.dim())), bool(keepdim), dtype=dtype)


def _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt):
    if unbiased is not None and correction is not None:
        raise RuntimeError("Only one of unbiased and correction may be given")
    corr = 1.0
    if unbiased is not None:
        corr = 1.0 if unbiased else 0.0
    if correction is not None:
        corr = float(correction)
    if dtype is None:
        dtype = input.dtype if input.dtype.is_floating_point else _float32
    compute = dtype if dtype.is_floating_point else _float32
    count = _count(input, mask, dim, True)
    sample_mean = sum(input, dim, keepdim=True, dtype=dtype, mask=mask) / count
    x = input - sample_mean
    total = sum(x * x.conj(), dim, keepdim=keepdim, dtype=compute, mask=mask)
    if not keepdim:
        count = count.reshape(list(total.shape))
    if corr != 0:
        count = _C.maximum(count.to(compute) - corr, 0.0)
    output = (total / count).to(dtype)
    return _C.sqrt(output) if take_sqrt else output


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    """torch.masked.var: the variance of the masked-in elements, with Bessel's correction by
    default (nan for a fully masked slice)."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, False)


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    """torch.masked.std: the square root of masked.var."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, True)


def _normalization(op, identity, input, dim, dtype, mask):
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.dim())[0]
    x = _combine(identity, input, mask).to(dtype)
    if op == "softmin":
        return _C.softmax(-x, d)
    return getattr(_C, op)(x, d)


def softmax(input, dim, *, dtype=None, mask=None):
    """torch.masked.softmax: masked-out elements get 0 (a fully masked slice gives nan)."""
    return _normalization("softmax", "amax", input, dim, dtype, mask)


def log_softmax(input, dim, *, dtype=None, mask=None):
    """torch.masked.log_softmax: masked-out elements get -inf."""
    return _normalization("log_softmax", "amax", input, dim, dtype, mask)


def softmin(input, dim, *, dtype=None, mask=None):
    """torch.masked.softmin: softmax of -input with masked-out elements getting 0."""
    return _normalization("softmin", "amin", input, dim, dtype, mask)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    """torch.masked.normalize: input over its masked ord-norm along dim (at least eps)."""
    dtype = input.dtype if dtype is None else dtype
    x = _combine("sum", input, mask)
    nrm = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    return x / _C.maximum(nrm, eps)
