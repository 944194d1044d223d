"""torch's counting, searching and scatter-reduce functions (unique, nonzero, argwhere,
nonzero_static, bincount, histc, histogram, histogramdd) as
composites of the registered ops; re-exported by _torch_scans and bound as Tensor methods.

Outputs whose size depends on the data (unique, nonzero, argwhere, bincount) run eagerly on
local tensors only; a meta, traced or global input raises a RuntimeError that says so."""

import collections

import numpy as np

from . import _C
from ._C import Tensor
from ._creation import tensor
from .autograd.grad_mode import no_grad

__all__ = [
    "unique",
    "nonzero",
    "argwhere",
    "nonzero_static",
    "bincount",
    "histc",
    "histogram",
    "histogramdd",
]

_FLOATS = (_C.dtype.float16, _C.dtype.bfloat16, _C.dtype.float32, _C.dtype.float64)
_INTS = (_C.dtype.uint8, _C.dtype.int8, _C.dtype.int32, _C.dtype.int64)
_I64 = _C.dtype.int64


def _return_type(name, fields, module=__name__):
    """A named tuple printed as PyTorch's (histogram(hist=..., ...)) that pickles: module binds
    it as _<name>_t."""
    cls = collections.namedtuple(name, fields, module=module)
    cls.__qualname__ = f"_{name}_t"
    return cls


_histogram_t = _return_type("histogram", ["hist", "bin_edges"])
_histogramdd_t = _return_type("histogramdd", ["hist", "bin_edges"])


def _check_tensor(x, name, what="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"[{name}] expects a tensor as {what}, got {type(x).__name__}")


def _data_dependent(x, name, what="its output size depends on the data"):
    """The output's size depends on the values: only a local tensor run eagerly has them."""
    if x.is_traced or x.device.type == "meta" or x.is_global:
        kind = "traced" if x.is_traced else "meta" if x.device.type == "meta" else "global"
        raise RuntimeError(
            f"[{name}] {what}, which a {kind} tensor of shape "
            f"{tuple(x.shape)} does not have here (call it on a local tensor eagerly)"
        )


def _has_values(x):
    return not x.is_traced and x.device.type != "meta" and not x.is_global


def _wrap_dim(dim, ndim, name):
    n = max(ndim, 1)
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"[{name}] dim must be an int, got {type(dim).__name__}")
    if not -n <= dim < n:
        raise IndexError(
            f"[{name}] dim {dim} is out of range for a tensor of {ndim} dimension(s) "
            f"(expected to be in [{-n}, {n - 1}])"
        )
    return dim % n


def _unravel(flat, shape):
    """Coordinates (one int64 tensor per dim) of flat row-major positions in shape."""
    coords = []
    for size in reversed(shape):
        coords.append(_C.remainder(flat, size))
        flat = _C.floor_divide(flat, size)
    return coords[::-1]


def nonzero(input, *, as_tuple=False):
    """torch.nonzero: the coordinates of the non-zero elements, in row-major order, as an
    (N, ndim) int64 tensor or (as_tuple) one 1-d tensor per dimension."""
    _check_tensor(input, "nonzero")
    _data_dependent(input, "nonzero")
    mask = (input if input.dtype == _C.dtype.bool else input != 0).reshape(-1)
    flat = _C.masked_select(_C.arange(mask.shape[0], device=input.device), mask)
    if input.dim() == 0:  # PyTorch: one row of no coordinates; as a tuple, a 1-d index
        if as_tuple:
            return (flat.mul(0),)
        return _C.zeros((flat.shape[0], 0), dtype=_I64, device=input.device)
    coords = _unravel(flat, tuple(input.shape)) if flat.shape[0] else [flat] * input.dim()
    return tuple(coords) if as_tuple else _C.stack(coords, 1)


def argwhere(input):
    """torch.argwhere: nonzero(input) as an (N, ndim) tensor."""
    return nonzero(input)


def nonzero_static(input, *, size, fill_value=-1):
    """torch.nonzero_static: the first `size` rows of nonzero(input), padded with fill_value;
    its shape is fixed, so it also runs on meta and traced tensors."""
    _check_tensor(input, "nonzero_static")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise RuntimeError(f"[nonzero_static] size must be a non-negative int, got {size!r}")
    mask = (input if input.dtype == _C.dtype.bool else input != 0).reshape(-1)
    n = mask.shape[0]
    if n == 0 or size == 0:
        return _C.full((size, input.dim()), fill_value, dtype=_I64, device=input.device)
    # A stable sort of "is zero" puts the non-zero positions first, in order.
    _, order = _C.sort(mask.logical_not().to(_C.dtype.uint8), 0, stable=True)
    count = mask.sum()
    if size > n:
        order = _C.cat([order, _C.zeros((size - n,), dtype=_I64, device=input.device)])
    order = order.narrow(0, 0, size)
    valid = (_C.arange(size, device=input.device) < count).unsqueeze(1)
    if input.dim() == 0:
        coords = _C.zeros((size, 0), dtype=_I64, device=input.device)
    else:
        coords = _C.stack(_unravel(order, tuple(input.shape)), 1)
    return _C.where(valid, coords, fill_value)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """torch.unique: the distinct elements (dim None: of the flattened input) or slices along
    dim, sorted, with the inverse (where each element went) and the counts. NaNs are all
    distinct, as PyTorch's; not differentiable."""
    _check_tensor(input, "unique")
    _data_dependent(input, "unique")
    x = input.detach()
    if dim is not None:
        values, inverse, counts = _unique_dim(x, _wrap_dim(dim, x.dim(), "unique"))
    else:
        flat = x.reshape(-1)
        n = flat.shape[0]
        s, perm = _C.sort(flat, 0, stable=True)
        start = _C.cat(
            [_C.ones((min(n, 1),), dtype=_C.dtype.bool, device=x.device), s[1:] != s[:-1]]
        )
        values = _C.masked_select(s, start)
        run = _C.cumsum(start.to(_I64), 0) - 1
        inverse = _C.zeros((n,), dtype=_I64, device=x.device).scatter(0, perm, run)
        inverse = inverse.reshape(tuple(x.shape))
        counts = _C.zeros((values.shape[0],), dtype=_I64, device=x.device)
        counts = counts.scatter_add(0, run, _C.ones_like(run))
    if not return_inverse and not return_counts:
        return values
    return (values,) + ((inverse,) if return_inverse else ()) + ((counts,) if return_counts else ())


def _unique_dim(x, d):
    """unique slices along dim d, sorted lexicographically: on the host (numpy)."""
    if any(n == 0 for i, n in enumerate(x.shape) if i != d) and x.shape[d] != 0:
        raise RuntimeError(
            f"[unique] the input {tuple(x.shape)} has a dimension of size 0 other than dim {d}: "
            "there are no slices to compare"
        )
    host = x.cpu() if x.device.type != "cpu" else x
    if host.dtype == _C.dtype.bfloat16:
        host = host.to(_C.dtype.float32)  # numpy has no bfloat16; the order is unchanged
    arr = np.array(host.numpy(), order="C")
    if arr.shape[d] == 0:
        vals, inv, cnt = arr, np.zeros(0, np.int64), np.zeros(0, np.int64)
    else:
        vals, inv, cnt = np.unique(arr, return_inverse=True, return_counts=True, axis=d)

    def laid(a, dtype):
        t = _C.from_numpy(np.array(a, order="C"))
        t = t if t.dtype == dtype else t.to(dtype)
        return t if x.device.type == "cpu" else t.to(x.device)

    return laid(vals, x.dtype), laid(inv.reshape(-1).astype(np.int64), _I64), laid(cnt, _I64)


def bincount(input, weights=None, minlength=0):
    """torch.bincount: the count (or the sum of weights) of each value of a 1-d tensor of
    non-negative integers, over max(input.max() + 1, minlength) bins."""
    _check_tensor(input, "bincount")
    _data_dependent(input, "bincount")
    if input.dim() != 1 or input.dtype not in _INTS:
        raise RuntimeError(
            f"[bincount] only supports 1-d non-negative integral inputs, got {input.dtype} of "
            f"shape {tuple(input.shape)}"
        )
    if isinstance(minlength, bool) or not isinstance(minlength, int) or minlength < 0:
        raise RuntimeError(f"[bincount] minlength should be a non-negative int, got {minlength!r}")
    if weights is not None and (weights.dim() != 1 or weights.shape[0] != input.shape[0]):
        raise RuntimeError(
            f"[bincount] weights should be 1-d and have the same length as input "
            f"{tuple(input.shape)}, got {tuple(weights.shape)}"
        )
    n = input.shape[0]
    if n and int(input.min()) < 0:
        raise RuntimeError("[bincount] only supports 1-d non-negative integral inputs")
    size = max(int(input.max()) + 1 if n else 0, minlength)
    idx = input.to(_I64)
    if weights is None:
        out = _C.zeros((size,), dtype=_I64, device=input.device)
        return out.scatter_add(0, idx, _C.ones_like(idx))
    dtype = weights.dtype if weights.dtype in (_C.dtype.float32, _C.dtype.float64) else None
    w = weights.to(dtype or _C.dtype.float64)
    return _C.zeros((size,), dtype=w.dtype, device=input.device).scatter_add(0, idx, w)


def _as_dtype(value, dtype):
    """value rounded as a scalar of dtype (float32 edges are float32 numbers)."""
    if dtype == _C.dtype.float64:
        return float(value)
    return float(_C.full((), value, dtype=dtype).to(_C.dtype.float64).item())


def _linspace_edges(left, right, steps, dtype, device):
    """PyTorch's linspace in dtype: start + step * i for the first half, end - step * (n - 1 - i)
    for the second (the last edge is exactly right)."""
    np_type = {_C.dtype.float64: np.float64, _C.dtype.float32: np.float32}.get(dtype, np.float32)
    start, end = np_type(left), np_type(right)
    step = (end - start) / np_type(steps - 1)
    i = np.arange(steps)
    half = steps // 2
    edges = np.where(
        i < half,
        start + step * i.astype(np_type),
        end - step * (steps - i - 1).astype(np_type),
    ).astype(np_type)
    return tensor(edges, dtype=dtype, device=device), (float(edges[0]), float(edges[-1] - edges[0]))


def _local_search(edges, col, inside, nb, lo, width):
    """PyTorch's bin of each value for equal bins: the interpolated guess, then the upper bound
    among the edges guess-1 .. guess+1 (no O(n * bins) search)."""
    guess = _C.where(inside, (col - lo) * nb / width, 0.0).to(_I64)
    guess = _C.clamp(guess, 0, nb)
    below = _C.zeros_like(guess)
    for off in (-1, 0, 1):
        k = guess + off
        edge = _C.gather(edges, 0, _C.clamp(k, 0, nb))
        below = below + ((k >= 0) & (k <= nb) & (edge <= col)).to(_I64)
    return _C.clamp_min(guess - 1, 0) + below - 1


def histc(input, bins=100, min=0, max=0):
    """torch.histc: counts over `bins` equal bins between min and max (the data's extremes when
    both are 0); elements outside are ignored, max falls in the last bin."""
    _check_tensor(input, "histc")
    if input.dtype not in _FLOATS:
        raise RuntimeError(f"[histc] expects a floating-point input, got {input.dtype}")
    if isinstance(bins, bool) or not isinstance(bins, int) or bins <= 0:
        raise RuntimeError(f"[histc] bins must be > 0, got {bins!r}")
    left, right = float(min), float(max)
    if left == right and input.numel() > 0:
        _data_dependent(input, "histc", "with min == max its bins span the data's extremes")
        left, right = float(input.min()), float(input.max())
    if left == right:
        left, right = left - 1, right + 1
    if not (np.isfinite(left) and np.isfinite(right)):
        raise RuntimeError(f"[histc] range of [{left}, {right}] is not finite")
    if left > right:
        raise RuntimeError(f"[histc] max must be larger than min, got min {min} and max {max}")
    x = input.detach().reshape(-1)
    lo, hi = _as_dtype(left, x.dtype), _as_dtype(right, x.dtype)
    width = _as_dtype(hi - lo, x.dtype)  # hi - lo is exact in float64, then rounded as x's
    with no_grad():
        # PyTorch's linear interpolation, in the input's dtype: (x - lo) * bins / (hi - lo).
        pos = ((x - lo) * bins / width).to(_I64)
        pos = _C.where(pos >= bins, bins - 1, pos)
        valid = (x >= lo) & (x <= hi)
        out = _C.zeros((bins,), dtype=x.dtype, device=x.device)
        return out.scatter_add(0, _C.where(valid, pos, 0), valid.to(x.dtype))


def _histogramdd(name, input, bins, range_, weight, density):
    _check_tensor(input, name)
    if input.dtype not in (_C.dtype.float32, _C.dtype.float64):
        raise RuntimeError(f"[{name}] expects a float or double input, got {input.dtype}")
    if input.dim() < 1:
        raise RuntimeError(f"[{name}] expects an input of at least 1 dimension, got a 0-d one")
    nd = input.shape[-1]
    x = input.detach().reshape(-1, nd)
    if isinstance(bins, Tensor) or isinstance(bins, int):
        bins = [bins] * nd
    bins = list(bins)
    if len(bins) != nd:
        raise RuntimeError(
            f"[{name}] expected {nd} sequences of bin edges (or bin counts) for an input whose "
            f"innermost dimension is {nd}, got {len(bins)}"
        )
    if range_ is not None:
        range_ = [float(v) for v in range_]
        if len(range_) != 2 * nd:
            raise RuntimeError(
                f"[{name}] for a {nd}-dimensional histogram, range should have {2 * nd} "
                f"elements, got {len(range_)}"
            )
    if weight is not None:
        if weight.dtype != input.dtype:
            raise RuntimeError(
                f"[{name}] if weight tensor is provided, it should have the same dtype as the "
                f"input tensor ({input.dtype}), got {weight.dtype}"
            )
        if tuple(weight.shape) != tuple(input.shape[:-1]):
            raise RuntimeError(
                f"[{name}] if weight tensor is provided, its shape {tuple(weight.shape)} should "
                f"equal the input's shape without its last dimension {tuple(input.shape[:-1])}"
            )
    edges, spans, lows, highs = [], [], None, None
    for d, b in enumerate(bins):
        if isinstance(b, Tensor):
            if b.dtype != input.dtype or b.dim() != 1 or b.shape[0] < 1:
                raise RuntimeError(
                    f"[{name}] bins tensors should be 1-d with at least one edge and have the "
                    f"input's dtype {input.dtype}, got {b.dtype} of shape {tuple(b.shape)}"
                )
            edges.append(b.detach())
            spans.append(None)
            continue
        if isinstance(b, bool) or not isinstance(b, int) or b <= 0:
            raise RuntimeError(f"[{name}] bins must be > 0, got {b!r}")
        if range_ is not None:
            left, right = range_[2 * d], range_[2 * d + 1]
        elif x.shape[0] > 0:
            _data_dependent(input, name, "without range its bins span the data's extremes")
            if lows is None:
                lows, highs = x.amin(0).tolist(), x.amax(0).tolist()
            left, right = lows[d], highs[d]
        else:
            left, right = 0.0, 1.0  # PyTorch's edges for no data and no range
        if not (np.isfinite(left) and np.isfinite(right)):
            raise RuntimeError(f"[{name}] range of [{left}, {right}] is not finite")
        if left > right:
            raise RuntimeError(f"[{name}] min {left} should not exceed max {right}")
        if left == right:  # numpy's widening
            left, right = left - 0.5, right + 0.5
        e, span = _linspace_edges(left, right, b + 1, input.dtype, input.device)
        edges.append(e)
        spans.append(span)
    counts = [e.shape[0] - 1 for e in edges]
    with no_grad():
        flat = _C.zeros((x.shape[0],), dtype=_I64, device=x.device)
        valid = _C.ones((x.shape[0],), dtype=_C.dtype.bool, device=x.device)
        for d, e in enumerate(edges):
            col = x[:, d].contiguous()
            inside = (col >= e[0]) & (col <= e[-1])
            if spans[d] is None:  # PyTorch's binary search over the given edges
                pos = _C.searchsorted(e, col, right=True) - 1
            else:
                pos = _local_search(e, col, inside, counts[d], *spans[d])
            pos = _C.where(pos >= counts[d], counts[d] - 1, pos)  # the last bin is closed
            valid = valid & inside
            flat = flat * counts[d] + pos
        total = int(np.prod(counts))
        w = valid.to(x.dtype) if weight is None else _C.where(valid, weight.reshape(-1), 0.0)
        hist = _C.zeros((total,), dtype=x.dtype, device=x.device)
        hist = hist.scatter_add(0, _C.where(valid, flat, 0), w).reshape(counts)
        if density:
            hist = hist / hist.sum()
            for d, e in enumerate(edges):
                shape = [1] * nd
                shape[d] = -1
                hist = hist / (e[1:] - e[:-1]).reshape(shape)
    return hist, edges


def histogram(input, bins, *, range=None, weight=None, density=False):
    """torch.histogram: (hist, bin_edges) over `bins` equal bins (in range, or the data's
    extremes) or the given 1-d edges; density divides by the total and the bin widths."""
    if isinstance(bins, Tensor) and bins.dim() != 1:
        raise RuntimeError(
            f"[histogram] bins must be an int or a 1-d tensor, got {tuple(bins.shape)}"
        )
    _check_tensor(input, "histogram")
    w = None if weight is None else weight.reshape(-1, 1)[:, 0]
    hist, edges = _histogramdd("histogram", input.reshape(-1, 1), [bins], range, w, density)
    return _histogram_t(hist, edges[0])


def histogramdd(input, bins, *, range=None, weight=None, density=False):
    """torch.histogramdd: the D-dimensional histogram of the points input[..., D]; bins an int,
    one int per dimension or one tensor of edges per dimension."""
    hist, edges = _histogramdd("histogramdd", input, bins, range, weight, density)
    return _histogramdd_t(hist, tuple(edges))


def _install():
    def method(fn):
        def bound(self, *args, **kwargs):
            return fn(self, *args, **kwargs)

        bound.__name__, bound.__doc__ = fn.__name__, fn.__doc__
        return bound

    for fn in (unique, nonzero, argwhere, nonzero_static, bincount, histc, histogram):
        setattr(Tensor, fn.__name__, method(fn))


_install()
