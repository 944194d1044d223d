"""torch's strided-view and shape functions as copies over the registered ops: as_strided,
as_strided_copy / _scatter, diagonal_scatter, Tensor.unfold / unfold_copy, aten's slice,
sum_to_size, unsafe_chunk / unsafe_split, unbind_copy, split_with_sizes_copy, constant_pad_nd.

A write into the result of as_strided / unfold / slice does not reach the input: true aliasing
views need strided storage access from C++. Values and gradients are PyTorch's (gather and
scatter carry the gradients, overlapping elements' summed)."""

import builtins
import operator

import numpy as np

import oneflowlike as flow

from . import _C

__all__ = [
    "as_strided",
    "as_strided_copy",
    "as_strided_scatter",
    "diagonal_scatter",
    "unfold_copy",
    "slice",
    "unsafe_chunk",
    "unsafe_split",
    "unbind_copy",
    "split_with_sizes_copy",
    "constant_pad_nd",
]


def _ints(name, what, values):
    try:
        return tuple(operator.index(v) for v in values)
    except TypeError:
        raise TypeError(f"[{name}] {what} must be a sequence of ints, got {values!r}") from None


def _size_args(name, sizes):
    """`f(2, 3)`, `f((2, 3))` and `f([2, 3])` all mean the size (2, 3)."""
    if len(sizes) == 1 and not isinstance(sizes[0], int):
        sizes = tuple(sizes[0])
    return _ints(name, "size", sizes)


def _wrap_dim(name, dim, ndim):
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"[{name}] Dimension out of range (expected to be in range of [{-n}, {n - 1}], but "
            f"got {dim})"
        )
    return dim % n


def _on_host(t):
    """Whether t's values can be read here (argument checks on data skip meta and traced)."""
    return t.device.type != "meta" and not t.is_traced


def _dense_order(size, stride):
    """The permutation that lays `size` out densely with exactly `stride`, or None."""
    order = sorted(range(len(size)), key=lambda d: (stride[d], size[d]), reverse=True)
    expect = 1
    for d in reversed(order):
        if size[d] != 1 and stride[d] != expect:
            return None
        expect *= size[d]
    return order


# ---- strided views as copies -------------------------------------------------------------------


def _positions(size, stride, offset):
    """Storage position of every element of the (size, stride, offset) view, shaped `size`."""
    pos = np.full(size, offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[d] = n
        pos = pos + (np.arange(n, dtype=np.int64) * s).reshape(shape)
    return pos


def _check_strided(name, size, stride, offset):
    if len(size) != len(stride):
        raise RuntimeError(
            f"[{name}] mismatch in length of strides and shape: size {size}, stride {stride}"
        )
    if any(s < 0 for s in stride):
        raise RuntimeError(f"[{name}] Negative strides are not supported: {stride}")
    if any(n < 0 for n in size) or offset < 0:
        raise RuntimeError(f"[{name}] negative size {size} or storage offset {offset}")


def _element_indices(name, input, size, stride, offset, layout):
    """For the (size, stride, offset) view of input's storage, which input element (in
    row-major order) each element reads. `layout` is input's (stride, storage_offset)."""
    _check_strided(name, size, stride, offset)
    in_pos = _positions(tuple(input.shape), *layout)
    inverse = np.full(int(in_pos.max(initial=-1)) + 1, -1, dtype=np.int64)
    inverse[in_pos.reshape(-1)] = np.arange(in_pos.size, dtype=np.int64)
    pos = _positions(size, stride, offset)
    if pos.size == 0:
        return pos
    if pos.max() >= inverse.size or (inverse[pos] < 0).any():
        need = int(pos.max()) + 1
        raise RuntimeError(
            f"[{name}] sizes {list(size)}, strides {list(stride)} and storage offset {offset} "
            f"require a storage of {need} elements, beyond those of the input of shape "
            f"{tuple(input.shape)} (strides {tuple(layout[0])}, offset {layout[1]}): this "
            f"as_strided copies and cannot reach a base tensor's storage outside the input"
        )
    return inverse[pos]


def _index_tensor(idx, like):
    return flow.tensor(idx, dtype=_C.dtype.int64, device=like.device)


def as_strided(input, size, stride, storage_offset=None):
    """The elements of input's storage at storage_offset + sum(i_k * stride_k), shaped `size`
    (torch.as_strided's values and gradient, overlapping elements' gradients summed). A copy,
    not a view: writes into it do not reach the input, and only storage the input's elements
    occupy can be read."""
    size, stride = _ints("as_strided", "size", size), _ints("as_strided", "stride", stride)
    offset = input.storage_offset() if storage_offset is None else storage_offset
    layout = (tuple(input.stride()), input.storage_offset())
    idx = _element_indices("as_strided", input, size, stride, offset, layout)
    return flow.take(input, _index_tensor(idx, input))


def _as_strided_(self, size, stride, storage_offset=None):
    """self becomes as_strided(self, size, stride, storage_offset), in place. Its data is
    replaced by that copy: other views of self's storage do not follow, and under autograd it
    is refused."""
    if self.requires_grad and _C.is_grad_enabled():
        raise NotImplementedError(
            "[as_strided_] on a tensor that requires grad needs true strided views (C++)"
        )
    self.data = as_strided(self.detach(), size, stride, storage_offset)
    return self


def as_strided_copy(input, size, stride, storage_offset=None):
    """as_strided's values in a new tensor (as_strided here always copies)."""
    return as_strided(input, size, stride, storage_offset)


def _clone_layout(input):
    """The strides a clone of input has: input's own when dense (any order), else contiguous."""
    shape, stride = tuple(input.shape), tuple(input.stride())
    if _dense_order(shape, stride) is not None:
        return stride, 0
    return tuple(int(np.prod(shape[d + 1 :])) for d in range(len(shape))), 0


def _scatter_into(name, input, idx, src):
    """A copy of input with src's elements written at input's row-major positions idx."""
    if tuple(src.shape) != idx.shape:
        try:
            src = src.expand(*idx.shape)
        except Exception:
            raise RuntimeError(
                f"[{name}] expected src to have a size equal to the slice of self. src size = "
                f"{list(src.shape)}, slice size = {list(idx.shape)}"
            ) from None
    if src.dtype != input.dtype:
        src = src.to(input.dtype)
    flat = input.reshape(-1)
    out = flat.scatter(0, _index_tensor(idx.reshape(-1), input), src.reshape(-1))
    return out.reshape(tuple(input.shape))


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of input with src written into its as_strided(size, stride, storage_offset) view
    (the view taken on the copy, as PyTorch's: offset 0 by default)."""
    size = _ints("as_strided_scatter", "size", size)
    stride = _ints("as_strided_scatter", "stride", stride)
    layout = _clone_layout(input)
    offset = layout[1] if storage_offset is None else storage_offset
    idx = _element_indices("as_strided_scatter", input, size, stride, offset, layout)
    return _scatter_into("as_strided_scatter", input, idx, src)


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of input with src written on its diagonal(offset, dim1, dim2)."""
    n = input.dim()
    if n < 2:
        raise RuntimeError(f"[diagonal_scatter] input must be at least 2-d, got {n}-d")
    d1, d2 = _wrap_dim("diagonal_scatter", dim1, n), _wrap_dim("diagonal_scatter", dim2, n)
    if d1 == d2:
        raise RuntimeError(f"[diagonal_scatter] dim1 and dim2 cannot be equal, got {dim1} {dim2}")
    flat = np.arange(input.numel(), dtype=np.int64).reshape(tuple(input.shape))
    idx = np.diagonal(flat, offset, d1, d2)
    if tuple(src.shape) != idx.shape:
        raise RuntimeError(
            f"[diagonal_scatter] expected src to have a size equal to the slice of self. src "
            f"size = {list(src.shape)}, slice size = {list(idx.shape)}"
        )
    return _scatter_into("diagonal_scatter", input, idx, src)


def _unfold(self, dimension, size, step):
    """Every window of `size` elements along `dimension`, `step` apart, as a new last dimension
    (torch.Tensor.unfold's values and gradient; a copy, not a view)."""
    n = self.dim()
    d = _wrap_dim("unfold", dimension, n)
    length = self.shape[d] if n else 1
    if size > length:
        raise RuntimeError(
            f"[unfold] maximum size for tensor at dimension {d} is {length} but size is {size}"
        )
    if step <= 0:
        raise RuntimeError(f"[unfold] step is {step} but must be > 0")
    if size < 0:
        raise RuntimeError(f"[unfold] size is {size} but must be >= 0")
    if n == 0:
        return self.reshape(1).narrow(0, 0, size)
    count = (length - size) // step + 1
    idx = np.arange(count)[:, None] * step + np.arange(size)[None, :]
    shape = tuple(self.shape)
    out = self.index_select(d, _index_tensor(idx.reshape(-1), self))
    out = out.reshape(shape[:d] + (count, size) + shape[d + 1 :])
    return out.movedim(d + 1, -1)


def unfold_copy(input, dimension, size, step):
    return _unfold(input, dimension, size, step)


def slice(input, dim=0, start=None, end=None, step=1):
    """torch.ops.aten.slice: input[..., start:end:step, ...] along dim (out-of-range bounds
    clamp, as Python's slicing)."""
    n = input.dim()
    d = _wrap_dim("slice", dim, n)
    if step <= 0:
        raise RuntimeError(f"[slice] step must be positive, got {step}")
    key = (builtins.slice(None),) * d + (builtins.slice(start, end, step),)
    return input[key]


def _sum_to_size(self, *size):
    """self summed over the dimensions that `size` broadcasts, to shape `size`."""
    size = _size_args("sum_to_size", size)
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s not in (1, shape[lead + i]) for i, s in enumerate(size)):
        raise RuntimeError(
            f"[sum_to_size] size {list(size)} is not expandable to size {list(shape)}"
        )
    out = self.sum(tuple(range(lead))) if lead else self
    keep = tuple(i for i, s in enumerate(size) if s == 1 and out.shape[i] != 1)
    return out.sum(keep, keepdim=True) if keep else out


def unsafe_chunk(input, chunks, dim=0):
    """chunk (PyTorch's unsafe_ form skips view tracking; ours are the same chunks)."""
    return tuple(flow.chunk(input, chunks, dim))


def unsafe_split(input, split_size, dim=0):
    return tuple(flow.split(input, split_size, dim))


def unbind_copy(input, dim=0):
    return tuple(t.clone() for t in flow.unbind(input, dim))


def split_with_sizes_copy(input, split_sizes, dim=0):
    return tuple(t.clone() for t in flow.split_with_sizes(input, list(split_sizes), dim))


def constant_pad_nd(input, pad, value=0):
    """F.pad in constant mode: (before, after) per dimension from the last; negative crops."""
    return flow.nn.functional.pad(input, list(pad), "constant", value)


def _install(tensor_type):
    methods = {
        "as_strided": as_strided,
        "as_strided_": _as_strided_,
        "unfold": _unfold,
        "diagonal_scatter": diagonal_scatter,
        "as_strided_scatter": as_strided_scatter,
        "sum_to_size": _sum_to_size,
        "unsafe_chunk": unsafe_chunk,
        "unsafe_split": unsafe_split,
    }
    for name, fn in methods.items():
        if not hasattr(tensor_type, name):
            setattr(tensor_type, name, fn)


_install(_C.Tensor)
