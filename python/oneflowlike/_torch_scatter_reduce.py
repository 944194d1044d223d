"""torch.scatter_reduce and torch.index_reduce (sum, prod, mean, amax, amin; include_self) as
composites of the registered ops; re-exported by _torch_scans and bound as Tensor methods.

sum and mean are scatter_adds. prod, amax and amin sort the contributions by their target, then
run a segmented parallel scan (Hillis-Steele, log2(n) elementwise steps) and take each segment's
last value: fixed shapes throughout, so meta and traced tensors work, and autograd goes through
the products exactly (zeros included)."""

from . import _C
from ._C import Tensor
from .autograd.grad_mode import no_grad
from ._torch_counting import _wrap_dim

__all__ = ["scatter_reduce", "index_reduce"]

_REDUCES = ("sum", "prod", "mean", "amax", "amin")
_I64 = _C.dtype.int64
_FLOATS = (_C.dtype.float16, _C.dtype.bfloat16, _C.dtype.float32, _C.dtype.float64)


def _segmented_scan(v, start, op):
    """Inclusive scan of the 1-d v with op, restarting where start is True. Across a segment's
    start the left operand is replaced (1 for mul, the right value for max/min), so an inf or
    NaN in one segment never reaches another's value or gradient."""
    n = v.shape[0]
    s = 1
    while s < n:
        right, head = v.narrow(0, s, n - s), start.narrow(0, s, n - s)
        left = _C.where(head, 1 if op is _C.mul else right, v.narrow(0, 0, n - s))
        joined = op(left, right)
        v = _C.cat([v.narrow(0, 0, s), joined])
        start = _C.cat([start.narrow(0, 0, s), head | start.narrow(0, 0, n - s)])
        s *= 2
    return v


def _targets(input, d, index):
    """The flat (row-major) position in input of each element of index, index's value along d."""
    strides = [1] * input.dim()
    for k in range(input.dim() - 2, -1, -1):
        strides[k] = strides[k + 1] * input.shape[k + 1]
    t = index * strides[d]
    for k in range(index.dim()):
        if k != d and index.shape[k] > 1:
            shape = [1] * index.dim()
            shape[k] = -1
            t = t + _C.arange(index.shape[k], device=index.device).view(shape) * strides[k]
    return t


def _check(name, input, d, index, src):
    if index.dtype != _I64:
        raise RuntimeError(f"[{name}] expected dtype int64 for index, got {index.dtype}")
    if src.dtype != input.dtype:
        raise RuntimeError(
            f"[{name}] expected self.dtype to be equal to src.dtype, got {input.dtype} and "
            f"{src.dtype}"
        )
    if not (index.dim() == input.dim() == src.dim()):
        raise RuntimeError(
            f"[{name}] index {tuple(index.shape)}, self {tuple(input.shape)} and src "
            f"{tuple(src.shape)} should have the same number of dimensions"
        )
    for k in range(index.dim()):
        if index.shape[k] > src.shape[k] or (k != d and index.shape[k] > input.shape[k]):
            raise RuntimeError(
                f"[{name}] expected index {tuple(index.shape)} to be smaller than self "
                f"{tuple(input.shape)} apart from dimension {d} and to be smaller than src "
                f"{tuple(src.shape)}"
            )
    if index.numel() and not index.is_traced and index.device.type != "meta":
        if not index.is_global:
            lo, hi = int(index.min()), int(index.max())
            if lo < 0 or hi >= input.shape[d]:
                bad = lo if lo < 0 else hi
                raise RuntimeError(
                    f"[{name}] index {bad} is out of bounds for dimension {d} with size "
                    f"{input.shape[d]}"
                )


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """torch.scatter_reduce: src's values reduced into a copy of input at index along dim with
    reduce ("sum", "prod", "mean", "amax", "amin"); include_self=False leaves input's values out
    of the reduction where something is scattered."""
    for what, t in (("input", input), ("index", index), ("src", src)):
        if not isinstance(t, Tensor):
            raise TypeError(f"[scatter_reduce] expects a tensor as {what}, got {type(t).__name__}")
    if reduce not in _REDUCES:
        raise RuntimeError(
            f"[scatter_reduce] reduce argument must be either sum, prod, mean, amax or amin, got "
            f"{reduce!r}"
        )
    d = _wrap_dim(dim, input.dim(), "scatter_reduce")
    if input.dim() == 0:  # PyTorch treats 0-d tensors as 1-d of one element here
        out = scatter_reduce(
            input.reshape(1), 0, index.reshape(-1), src.reshape(-1), reduce,
            include_self=include_self,
        )  # fmt: skip
        return out.reshape(())
    _check("scatter_reduce", input, d, index, src)
    if index.numel() == 0:
        return input.clone()
    for k in range(index.dim()):
        if src.shape[k] != index.shape[k]:
            src = src.narrow(k, 0, index.shape[k])
    if reduce in ("sum", "mean"):
        base = input if include_self else input.scatter(d, index, _C.zeros_like(src))
        out = _C.scatter_add(base, d, index, src)
        if reduce == "sum":
            return out
        with no_grad():
            count = _C.ones_like(input) if include_self else _C.zeros_like(input)
            count = _C.scatter_add(count, d, index, _C.ones_like(src))
            count = _C.where(count == 0, 1, count)
        if input.dtype in _FLOATS:
            return out / count
        return _C.floor_divide(out, count)
    n = input.numel()
    with no_grad():
        targets = _targets(input, d, index).reshape(-1)
        if include_self:
            targets = _C.cat([_C.arange(n, device=input.device), targets])
        sorted_t, perm = _C.sort(targets, 0, stable=True)
        m = sorted_t.shape[0]
        ones = _C.ones((1,), dtype=_C.dtype.bool, device=input.device)
        change = sorted_t[1:] != sorted_t[:-1]
        head, tail = _C.cat([ones, change]), _C.cat([change, ones])
        # Each output position's last contribution in sorted order (the one tail with that
        # target; the other entries add 0), and whether it has any.
        pos = _C.where(tail, _C.arange(m, device=input.device), 0)
        last = _C.zeros((n,), dtype=_I64, device=input.device).scatter_add(0, sorted_t, pos)
        hit = _C.zeros((n,), dtype=_I64, device=input.device).scatter_add(
            0, sorted_t, tail.to(_I64)
        )
        hit = hit > 0
    values = src.reshape(-1)
    if include_self:
        values = _C.cat([input.reshape(-1), values])
    op = {"prod": _C.mul, "amax": _C.maximum, "amin": _C.minimum}[reduce]
    scanned = _segmented_scan(_C.gather(values, 0, perm), head, op)
    out = _C.where(hit, _C.gather(scanned, 0, last), input.reshape(-1))
    return out.reshape(tuple(input.shape))


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """torch.index_reduce: source's slices along dim reduced into a copy of input at the 1-d
    index's positions with reduce ("prod", "mean", "amax", "amin")."""
    for what, t in (("input", input), ("index", index), ("source", source)):
        if not isinstance(t, Tensor):
            raise TypeError(f"[index_reduce] expects a tensor as {what}, got {type(t).__name__}")
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(
            f"[index_reduce] expected reduce to be one of prod, mean, amax or amin, got {reduce!r}"
        )
    d = _wrap_dim(dim, input.dim(), "index_reduce")
    if index.dim() > 1 or index.dtype not in (_I64, _C.dtype.int32):
        raise RuntimeError(
            f"[index_reduce] index should be a 0-d or 1-d int64/int32 tensor, got {index.dtype} "
            f"of shape {tuple(index.shape)}"
        )
    if input.dim() == 0 or source.dim() == 0:
        out = index_reduce(
            input.reshape(1) if input.dim() == 0 else input, 0 if input.dim() == 0 else d,
            index.reshape(-1), source.reshape(1) if source.dim() == 0 else source, reduce,
            include_self=include_self,
        )  # fmt: skip
        return out.reshape(tuple(input.shape))
    if source.dim() != input.dim() or any(
        source.shape[k] != input.shape[k] for k in range(input.dim()) if k != d
    ):
        raise RuntimeError(
            f"[index_reduce] source {tuple(source.shape)} and self {tuple(input.shape)} must have "
            f"the same slice shapes apart from dim {d}"
        )
    if index.numel() != source.shape[d]:
        raise RuntimeError(
            f"[index_reduce] index has {index.numel()} elements, source {tuple(source.shape)} has "
            f"{source.shape[d]} along dim {d}: they should match"
        )
    shape = [1] * source.dim()
    shape[d] = -1
    full = index.to(_I64).reshape(shape).expand(tuple(source.shape)).contiguous()
    return scatter_reduce(input, d, full, source, reduce, include_self=include_self)


def _inplace(fn, name):
    def inplace(self, *args, **kwargs):
        # Under autograd the op reads a clone, which the copy_ below leaves intact.
        source = self.clone() if self.requires_grad and _C.is_grad_enabled() else self
        return self.copy_(fn(source, *args, **kwargs))

    inplace.__name__ = name
    inplace.__doc__ = f"In place: self.copy_(self.{name[:-1]}(...)). See {name[:-1]}."
    return inplace


def _install():
    def method(fn):
        def bound(self, *args, **kwargs):
            return fn(self, *args, **kwargs)

        bound.__name__, bound.__doc__ = fn.__name__, fn.__doc__
        return bound

    for fn in (scatter_reduce, index_reduce):
        setattr(Tensor, fn.__name__, method(fn))
        setattr(Tensor, fn.__name__ + "_", _inplace(fn, fn.__name__ + "_"))


_install()
