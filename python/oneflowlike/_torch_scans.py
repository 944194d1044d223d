"""torch's cumulative, order-statistic, counting and scatter-reduce functions (cumprod, cummax,
logcumsumexp, nanmedian, mode, quantile, unique, histc, bincount, scatter_reduce, ...) as
composites of the registered ops; bound as flow.<name> and Tensor.<name>.

The scans are parallel prefixes (Hillis-Steele): log2(n) steps, each one elementwise op over
shifted slices of the whole tensor, so autograd, meta, SBP and nn.Graph come from the ops."""

import itertools
import math

from . import _C
from ._C import Tensor
from ._creation import tensor
from .autograd.grad_mode import no_grad
from ._torch_counting import *  # noqa: F401,F403
from ._torch_counting import __all__ as _counting_all, _return_type, _wrap_dim
from ._torch_scatter_reduce import *  # noqa: F401,F403
from ._torch_scatter_reduce import __all__ as _scatter_all

__all__ = (
    [
        "cumprod",
        "cummax",
        "cummin",
        "logcumsumexp",
        "nanmedian",
        "mode",
        "quantile",
        "nanquantile",
        "frexp",
        "combinations",
        "gradient",
    ]
    + list(_counting_all)
    + list(_scatter_all)
)

_FLOATS = (_C.dtype.float16, _C.dtype.bfloat16, _C.dtype.float32, _C.dtype.float64)


_cummax_t = _return_type("cummax", ["values", "indices"], __name__)
_cummin_t = _return_type("cummin", ["values", "indices"], __name__)
_nanmedian_t = _return_type("nanmedian", ["values", "indices"], __name__)
_mode_t = _return_type("mode", ["values", "indices"], __name__)
_frexp_t = _return_type("frexp", ["mantissa", "exponent"], __name__)


def _check_tensor(x, name):
    if not isinstance(x, Tensor):
        raise TypeError(f"[{name}] expects a tensor as input, got {type(x).__name__}")


def _positions(x, d):
    """int64 positions along dim d, laid out as x (for carrying indices through a scan)."""
    n = x.shape[d]
    shape = [1] * x.dim()
    shape[d] = n
    pos = _C.arange(n, device=x.device).view(shape)
    return pos.expand(tuple(x.shape)).contiguous()


def _scan(x, d, op):
    """Inclusive scan of x along dim d with the associative op (Hillis-Steele)."""
    n = x.shape[d]
    s = 1
    while s < n:
        x = _C.cat([x.narrow(d, 0, s), op(x.narrow(d, 0, n - s), x.narrow(d, s, n - s))], d)
        s *= 2
    return x


def cumprod(input, dim, *, dtype=None):
    """torch.cumprod: the running product along dim (integers and bools accumulate in int64)."""
    _check_tensor(input, "cumprod")
    d = _wrap_dim(dim, input.dim(), "cumprod")
    x = input
    if dtype is not None:
        x = x.to(dtype)
    elif x.dtype not in _FLOATS and x.dtype != _C.dtype.complex64:
        x = x.to(_C.dtype.int64)
    if x.dim() == 0:
        return x.clone()
    return _scan(x, d, _C.mul)


def logcumsumexp(input, dim):
    """torch.logcumsumexp: log(cumsum(exp(x))) along dim, as a scan of logaddexp (stable)."""
    _check_tensor(input, "logcumsumexp")
    d = _wrap_dim(dim, input.dim(), "logcumsumexp")
    if input.dtype not in _FLOATS:
        raise RuntimeError(
            f"[logcumsumexp] expects a floating-point input, got {input.dtype} "
            f"of shape {tuple(input.shape)}"
        )
    if input.dim() == 0:
        return input.clone()
    return _scan(input, d, _C.logaddexp)


def _cum_extreme(input, dim, name, greater):
    """(values, indices) of the running max (greater) or min along dim. A later element wins
    ties (PyTorch returns the last index among equals) and NaN wins over any number."""
    _check_tensor(input, name)
    d = _wrap_dim(dim, input.dim(), name)
    if input.dim() == 0:
        return input.clone(), _C.zeros((), dtype=_C.dtype.int64, device=input.device)
    if input.dtype == _C.dtype.complex64:
        raise RuntimeError(f"[{name}] is not defined for complex input {tuple(input.shape)}")
    with no_grad():
        x = input.detach()
        if x.dtype == _C.dtype.bool:
            x = x.to(_C.dtype.uint8)
        # The running extreme (NaN propagates), then the last position j <= i where x_j equals
        # it: the running max of the positions where x reaches its own running extreme.
        v = _scan(x, d, _C.maximum if greater else _C.minimum)
        reached = x == v
        if input.dtype in _FLOATS:
            reached = reached | x.isnan()
        i = _scan(_C.where(reached, _positions(x, d), 0), d, _C.maximum)
    # The values gathered from input: the gradient goes to the index, as PyTorch's.
    return _C.gather(input, d, i), i


def cummax(input, dim):
    """torch.cummax: (values, indices) of the running maximum along dim."""
    return _cummax_t(*_cum_extreme(input, dim, "cummax", True))


def cummin(input, dim):
    """torch.cummin: (values, indices) of the running minimum along dim."""
    return _cummin_t(*_cum_extreme(input, dim, "cummin", False))


def _reduction_dim_nonempty(input, d, name):
    if input.shape[d] == 0:
        raise IndexError(
            f"[{name}] expected reduction dim {d} of the input {tuple(input.shape)} to have "
            "non-zero size"
        )


def nanmedian(input, dim=None, keepdim=False):
    """torch.nanmedian: the lower median of the non-NaN values (NaN where all are NaN); with dim,
    (values, indices) along it."""
    _check_tensor(input, "nanmedian")
    if dim is None:
        if input.numel() == 0:
            return _C.full((), math.nan, dtype=input.dtype, device=input.device)
        return nanmedian(input.flatten(), 0).values.reshape(())
    d = _wrap_dim(dim, input.dim(), "nanmedian")
    if input.dim() == 0:
        return _nanmedian_t(input.clone(), _C.zeros((), dtype=_C.dtype.int64, device=input.device))
    _reduction_dim_nonempty(input, d, "nanmedian")
    with no_grad():
        s, p = _C.sort(input.detach(), d, stable=True)  # NaN sorts last
        k = s.isnan().logical_not().sum(d, keepdim=True)
        pos = _C.clamp_min(_C.floor_divide(k - 1, 2), 0)
        idx = _C.gather(p, d, pos)
    values = _C.gather(input, d, idx)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return _nanmedian_t(values, idx)


def mode(input, dim=-1, keepdim=False):
    """torch.mode: the most frequent value along dim (the smallest among equally frequent ones)
    and the index of its last occurrence, as PyTorch returns them."""
    _check_tensor(input, "mode")
    d = _wrap_dim(dim, input.dim(), "mode")
    if input.dim() == 0:
        return _mode_t(input.clone(), _C.zeros((), dtype=_C.dtype.int64, device=input.device))
    _reduction_dim_nonempty(input, d, "mode")
    n = input.shape[d]
    with no_grad():
        s, p = _C.sort(input.detach(), d, stable=True)
        pos = _positions(s, d)
        first = _C.ones_like(s.narrow(d, 0, 1), dtype=_C.dtype.bool)
        start = _C.cat([first, s.narrow(d, 1, n - 1) != s.narrow(d, 0, n - 1)], d)
        run_start = _scan(_C.where(start, pos, 0), d, _C.maximum)
        # The first longest run ends at the smallest of the most frequent values.
        best = _C.argmax(pos - run_start, d, keepdim=True)
        idx = _C.gather(p, d, best)
    values = _C.gather(input, d, idx)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return _mode_t(values, idx)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(name, input, q, dim, keepdim, interpolation, ignore_nan):
    _check_tensor(input, name)
    if input.dtype not in (_C.dtype.float32, _C.dtype.float64):
        raise RuntimeError(
            f"[{name}] input tensor must be either float or double dtype, got {input.dtype}"
        )
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(
            f"[{name}] interpolation must be one of linear, lower, higher, midpoint or nearest, "
            f"got {interpolation!r}"
        )
    if input.numel() == 0:
        raise RuntimeError(f"[{name}] input tensor must be non-empty, got {tuple(input.shape)}")
    if isinstance(q, Tensor):
        if q.dim() > 1:
            raise RuntimeError(f"[{name}] q must be a scalar or 1D tensor, got {tuple(q.shape)}")
        if q.dtype != input.dtype:
            raise RuntimeError(
                f"[{name}] q tensor must be same dtype as the input tensor ({input.dtype}), got "
                f"{q.dtype}"
            )
        if not q.is_traced and q.device.type != "meta" and q.numel():
            if not bool(((q >= 0) & (q <= 1)).all()):
                raise RuntimeError(f"[{name}] q values must be in the range [0, 1]")
        scalar_q = q.dim() == 0
        qv = q.reshape(-1)
    else:
        if isinstance(q, bool) or not isinstance(q, (int, float)):
            raise TypeError(f"[{name}] q must be a float or a tensor, got {type(q).__name__}")
        if not 0 <= q <= 1:
            raise RuntimeError(f"[{name}] q must be in the range [0, 1] but got {q}")
        scalar_q = True
        qv = _C.full((1,), float(q), dtype=input.dtype, device=input.device)
    if dim is None:
        x = input.flatten()
    else:
        d = _wrap_dim(dim, input.dim(), name)
        x = input.movedim(d, -1) if input.dim() else input.reshape(1)
    with no_grad():
        _, perm = _C.sort(x.detach(), -1, stable=True)
    sorted_ = _C.gather(x, -1, perm)  # the gradient reaches input through the gather
    batch, n = tuple(sorted_.shape[:-1]), sorted_.shape[-1]
    nq = qv.shape[0]
    out_shape = (nq,) + batch + (1,)
    qb = qv.reshape((nq,) + (1,) * (len(batch) + 1))
    # ranks keep q's gradient: linear interpolation's weight is differentiable in q.
    s = sorted_.detach()
    if ignore_nan:
        k = s.isnan().logical_not().sum(-1, keepdim=True).to(input.dtype)
        ranks = qb * (k - 1)
        ranks = _C.where(ranks < 0, 0.0, ranks)
    else:
        ranks = qb * float(n - 1)
        ranks = _C.where(s.isnan().any(-1, keepdim=True), float(n - 1), ranks)
    ranks = ranks.expand(out_shape)
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = _C.round(ranks)  # half to even, as PyTorch's round_
    with no_grad():
        below = ranks.detach().to(_C.dtype.int64).contiguous()
        above = ranks.detach().ceil().to(_C.dtype.int64).contiguous()
    s_q = sorted_.unsqueeze(0).expand((nq,) + batch + (n,))
    result = _C.gather(s_q, -1, below)
    if interpolation in ("linear", "midpoint"):
        weights = _C.full_like(ranks, 0.5) if interpolation == "midpoint" else ranks - below
        result = _C.lerp(result, _C.gather(s_q, -1, above), weights)
    result = result.squeeze(-1)
    if keepdim:
        if dim is None:
            result = result.reshape((nq,) + (1,) * input.dim())
        elif input.dim():
            result = result.unsqueeze(-1).movedim(-1, 1 + d)
    elif dim is not None and input.dim() == 0:
        result = result.reshape((nq,))
    return result.squeeze(0) if scalar_q else result


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """torch.quantile: the q-th quantiles along dim (of all elements when None); q a float or a
    0-d/1-d tensor (its values lead the output's shape); a NaN in a row makes its results NaN."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """torch.nanquantile: quantile over the non-NaN values (NaN where a row has none)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


def frexp(input):
    """torch.frexp: (mantissa, exponent) with input = mantissa * 2**exponent, |mantissa| in
    [0.5, 1) (0, inf and NaN keep themselves with exponent 0); exponent is int32."""
    _check_tensor(input, "frexp")
    if input.dtype not in _FLOATS:
        raise RuntimeError(f"[frexp] only supports floating-point dtypes, got {input.dtype}")
    with no_grad():
        x = input.detach().to(_C.dtype.float64)
        regular = x.isfinite() & (x != 0)
        e = _C.floor(_C.log2(_C.where(regular, x.abs(), 1.0))) + 1
        half = _C.floor(e / 2)  # two factors: 2**-e alone overflows for subnormals
        m = x * _C.exp2(-half) * _C.exp2(half - e)
        big, small = m.abs() >= 1, m.abs() < 0.5  # log2 rounded across a power of two
        e = _C.where(regular, e + big.to(e.dtype) - small.to(e.dtype), 0.0)
        half = _C.floor(e / 2)  # powers of two: the products below are exact
        s1, s2 = _C.exp2(-half).to(input.dtype), _C.exp2(half - e).to(input.dtype)
    m = _C.where(regular, input * s1 * s2, input)  # mantissa's gradient is 2**-exponent
    return _frexp_t(m, e.to(_C.dtype.int32))


def combinations(input, r=2, with_replacement=False):
    """torch.combinations: the length-r combinations of a 1-d tensor's elements (itertools'
    order), as rows of an (N, r) tensor."""
    _check_tensor(input, "combinations")
    if input.dim() != 1:
        raise RuntimeError(f"[combinations] expects a 1D vector, got shape {tuple(input.shape)}")
    if isinstance(r, bool) or not isinstance(r, int) or r < 0:
        raise RuntimeError(f"[combinations] expects a non-negative int r, got {r!r}")
    if r == 0:
        return _C.empty((0,), dtype=input.dtype, device=input.device)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = [i for c in pick(range(input.shape[0]), r) for i in c]
    index = tensor(rows, dtype=_C.dtype.int64, device=input.device)
    return _C.index_select(input, 0, index).reshape(len(rows) // r, r)


def _spacings(input, spacing, dims):
    """One entry per dim: a number (uniform step) or a 1-d coordinate tensor."""
    if spacing is None:
        spacing = 1
    if isinstance(spacing, Tensor) and spacing.dim() == 0:
        spacing = spacing.item()
    if isinstance(spacing, (int, float)) and not isinstance(spacing, bool):
        return [spacing] * len(dims)
    if isinstance(spacing, Tensor):
        spacing = [spacing]
    if not isinstance(spacing, (list, tuple)):
        raise TypeError(f"[gradient] spacing must be a number, a list or a tuple, got {spacing!r}")
    if len(spacing) != len(dims):
        raise RuntimeError(
            f"[gradient] expected spacing to be unspecified, a scalar or a list of length "
            f"{len(dims)} (one per dim), got a list of length {len(spacing)}"
        )
    out = []
    for s, d in zip(spacing, dims):
        if isinstance(s, Tensor) and s.dim() == 0:
            s = s.item()
        if isinstance(s, Tensor):
            if s.dim() != 1 or s.shape[0] != input.shape[d]:
                raise RuntimeError(
                    f"[gradient] the coordinates for dim {d} must be 1-d of length "
                    f"{input.shape[d]} (the input {tuple(input.shape)}), got {tuple(s.shape)}"
                )
        elif isinstance(s, bool) or not isinstance(s, (int, float)):
            raise TypeError(f"[gradient] a spacing must be a number or a tensor, got {s!r}")
        out.append(s)
    return out


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """torch.gradient: central differences in the interior and one-sided differences of order
    edge_order at the ends, along each dim; spacing a number, one per dim, or coordinates."""
    _check_tensor(input, "gradient")
    if edge_order not in (1, 2):
        raise RuntimeError(
            f"[gradient] only supports edge_order=1 and edge_order=2, got {edge_order}"
        )
    if dim is None:
        dims = list(range(input.dim()))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
        dims = [_wrap_dim(d, input.dim(), "gradient") for d in dims]
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"[gradient] dim {dim} appears multiple times in the list of dims")
    if input.dim() == 0:
        raise RuntimeError("[gradient] expects a tensor of at least one dimension, got a 0-d one")
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError(
                f"[gradient] expected each dimension size to be at least edge_order+1 "
                f"({edge_order + 1}), got dim {d} of size {input.shape[d]} in {tuple(input.shape)}"
            )
    x = input if input.dtype in _FLOATS else input.to(_C.dtype.float32)
    out = []
    for d, h in zip(dims, _spacings(input, spacing, dims)):
        n = x.shape[d]

        def sl(start, stop):
            start, stop = start % n if start < 0 else start, stop % n if stop <= 0 else stop
            return x.narrow(d, start, stop - start)

        if isinstance(h, Tensor):
            out.append(_gradient_coordinates(x, d, h.to(x.dtype), edge_order, sl))
            continue
        center = (sl(2, n) - sl(0, -2)) / h
        if edge_order == 1:
            first = (sl(1, 2) - sl(0, 1)) / h
            last = (sl(-1, n) - sl(-2, -1)) / h
        else:
            first = (sl(0, 1) * -1.5 + sl(1, 2) * 2 - sl(2, 3) * 0.5) / h
            last = (sl(-3, -2) * 0.5 + sl(-2, -1) * -2 + sl(-1, n) * 1.5) / h
        out.append(_C.cat([first, center / 2, last], d))
    return tuple(out)


def _gradient_coordinates(x, d, coords, edge_order, sl):
    """PyTorch's non-uniform stencil: second-order differences over the coordinates' steps."""
    shape = [1] * x.dim()
    shape[d] = -1
    dx = coords[1:] - coords[:-1]
    dx1, dx2 = dx[:-1], dx[1:]
    a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
    b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
    c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
    n = x.shape[d]
    center = a * sl(0, -2) + b * sl(1, -1) + c * sl(2, n)
    if edge_order == 1:
        first = (sl(1, 2) - sl(0, 1)) / dx[0]
        last = (sl(-1, n) - sl(-2, -1)) / dx[-1]
    else:
        d0, d1 = dx[0], dx[1]
        first = (
            sl(0, 1) * (-(2.0 * d0 + d1) / (d0 * (d0 + d1)))
            + sl(1, 2) * ((d0 + d1) / (d0 * d1))
            + sl(2, 3) * (-d0 / (d1 * (d0 + d1)))
        )
        e1, e2 = dx[-1], dx[-2]
        last = (
            sl(-3, -2) * (e1 / (e2 * (e1 + e2)))
            + sl(-2, -1) * (-(e1 + e2) / (e1 * e2))
            + sl(-1, n) * ((2 * e1 + e2) / (e1 * (e1 + e2)))
        )
    return _C.cat([first, center, last], d)


def _install():
    def method(fn):
        def bound(self, *args, **kwargs):
            return fn(self, *args, **kwargs)

        bound.__name__, bound.__doc__ = fn.__name__, fn.__doc__
        return bound

    for fn in (cumprod, cummax, cummin, logcumsumexp, nanmedian, mode, quantile, nanquantile,
               frexp):  # fmt: skip
        setattr(Tensor, fn.__name__, method(fn))


_install()
