"""torch's creation, shape, view, dtype-conversion and indexing functions that are composites of
the registered ops (tril_indices, logspace, as_strided, unfold, index_put, dtype shorthands, ...);
bound as flow.<name> and Tensor.<name>.

The strided views live in _torch_views, the samplers in _torch_random, ATen's native_* in
_torch_native and multi_head_attention_forward in _torch_mha; this module gathers their names
(and flow.ops.aten, the ATen-only names torch's tests call)."""

import math

import numpy as np

import oneflowlike as flow

from . import _C
from . import _torch_native as _native
from . import _torch_views as _views
from ._torch_random import *  # noqa: F401,F403
from ._torch_random import __all__ as _random_all
from ._torch_native import *  # noqa: F401,F403
from ._torch_native import __all__ as _native_all
from ._torch_mha import multi_head_attention_forward
from ._torch_views import *  # noqa: F401,F403
from ._torch_views import __all__ as _views_all
from ._torch_views import _dense_order, _index_tensor, _ints, _on_host, _size_args

__all__ = (
    [
        "tril_indices",
        "triu_indices",
        "logspace",
        "scalar_tensor",
        "empty_strided",
        "empty_permuted",
        "broadcast_shapes",
        "index_put",
        "index_put_",
        "put",
        "zero_",
        "resize_as_",
        "ops",
    ]
    + _views_all
    + _random_all
    + _native_all
)

_Tensor = _C.Tensor


# ---- creation --------------------------------------------------------------------------------


def _tri_indices(name, row, col, offset, dtype, device, upper):
    for what, v in (("row", row), ("col", col)):
        if v < 0:
            raise RuntimeError(f"[{name}] {what} must be non-negative, got {v}")
    r, c = np.meshgrid(np.arange(row), np.arange(col), indexing="ij")
    keep = (c - r >= offset) if upper else (c - r <= offset)
    out = np.stack([r[keep], c[keep]]).astype(np.int64)
    return flow.tensor(out, dtype=dtype or _C.dtype.int64, device=device)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, N) row and column indices of the lower triangle of a row x col matrix (entries
    with col - row <= offset), row by row."""
    return _tri_indices("tril_indices", row, col, offset, dtype, device, upper=False)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, N) indices of the upper triangle (col - row >= offset), row by row."""
    return _tri_indices("triu_indices", row, col, offset, dtype, device, upper=True)


def _number(name, what, v):
    if isinstance(v, _Tensor):
        if v.dim() != 0:
            raise RuntimeError(f"[{name}] {what} must be a 0-d tensor, got shape {tuple(v.shape)}")
        return v.item()
    return v


def logspace(
    start,
    end,
    steps,
    base=10.0,
    *,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
):
    """base ** linspace(start, end, steps), computed in float64 and cast to dtype (integer
    dtypes truncate, as PyTorch's)."""
    if out is not None:
        raise NotImplementedError("[logspace] out= is not supported; use the returned tensor")
    start, end = _number("logspace", "start", start), _number("logspace", "end", end)
    if steps < 0:
        raise RuntimeError(f"[logspace] number of steps must be non-negative, got {steps}")
    if isinstance(start, complex) or isinstance(end, complex):
        raise NotImplementedError("[logspace] complex start/end are not supported")
    exps = flow.linspace(start, end, steps, dtype=_C.dtype.float64, device=device)
    vals = flow.pow(float(base), exps)
    vals = vals.to(dtype or flow.get_default_dtype())
    return vals.requires_grad_(True) if requires_grad else vals


def scalar_tensor(
    s, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False
):
    """A 0-d tensor holding s, of the default float dtype unless dtype is given."""
    if isinstance(s, _Tensor):
        s = s.item()
    return flow.tensor(
        s, dtype=dtype or flow.get_default_dtype(), device=device, requires_grad=requires_grad
    )


def _permuted_empty(size, order, dtype, device, requires_grad):
    phys = [size[d] for d in order]
    inverse = [0] * len(order)
    for i, d in enumerate(order):
        inverse[d] = i
    out = flow.empty(phys, dtype=dtype, device=device).permute(inverse)
    return out.requires_grad_(True) if requires_grad else out


def empty_strided(
    size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False
):
    """An uninitialised tensor of `size`. Strides of a dense layout (any dimension order) are
    honoured exactly; others (gaps, overlaps) give a contiguous tensor: this framework cannot
    yet allocate a storage and view it with arbitrary strides."""
    size, stride = _ints("empty_strided", "size", size), _ints("empty_strided", "stride", stride)
    if len(size) != len(stride):
        raise RuntimeError(
            f"[empty_strided] mismatch in length of strides and shape: size {size}, stride "
            f"{stride}"
        )
    if any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise RuntimeError(f"[empty_strided] negative size or stride: {size}, {stride}")
    order = _dense_order(size, stride) or list(range(len(size)))
    return _permuted_empty(size, order, dtype, device, requires_grad)


def empty_permuted(
    size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
    pin_memory=False,
):  # fmt: skip
    """An uninitialised tensor of `size` whose dimensions lie in memory in the order
    physical_layout (outermost first): empty([size[p] for p in layout]).permute(inverse)."""
    size = _ints("empty_permuted", "size", size)
    order = _ints("empty_permuted", "physical_layout", physical_layout)
    if sorted(order) != list(range(len(size))):
        raise RuntimeError(
            f"[empty_permuted] physical_layout {order} is not a permutation of the {len(size)} "
            f"dimensions of size {size}"
        )
    return _permuted_empty(size, order, dtype, device, requires_grad)


def _new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None,
                       requires_grad=False, pin_memory=False):  # fmt: skip
    return empty_strided(
        size,
        stride,
        dtype=dtype or self.dtype,
        device=device or self.device,
        requires_grad=requires_grad,
    )


def broadcast_shapes(*shapes):
    """The shape that tensors of the given shapes broadcast to (ints count as 1-d shapes)."""
    dims = [(s,) if isinstance(s, int) else _ints("broadcast_shapes", "shape", s) for s in shapes]
    out = [1] * max((len(d) for d in dims), default=0)
    for i, d in enumerate(dims):
        for k, n in enumerate(reversed(d)):
            if n < 0:
                raise RuntimeError(
                    f"[broadcast_shapes] Trying to create tensor with negative dimension {n}: {d}"
                )
            j = len(out) - 1 - k
            if out[j] == 1:
                out[j] = n
            elif n not in (1, out[j]):
                raise RuntimeError(
                    f"[broadcast_shapes] Shape mismatch: objects cannot be broadcast to a single "
                    f"shape: shape {tuple(d)} (argument {i}) has {n} at dimension {j - len(out)} "
                    f"where the others have {out[j]}"
                )
    return flow.Size(out)


# ---- index_put, put ---------------------------------------------------------------------------


def _mask_coordinates(name, mask):
    """The coordinates of mask's True elements, one int64 tensor per dimension, row-major."""
    if not _on_host(mask):
        raise NotImplementedError(
            f"[{name}] a bool mask index needs its values: not supported on meta or traced tensors"
        )
    coords = np.nonzero(mask.detach().cpu().numpy())
    return [_index_tensor(c.astype(np.int64), mask) for c in coords]


def _index_list(name, input, indices):
    """Integer index tensors, one per leading dimension indexed (bool masks become their
    nonzero coordinates)."""
    if isinstance(indices, _Tensor):
        indices = (indices,)
    out = []
    for t in indices:
        if t is None:
            raise NotImplementedError(f"[{name}] None (a full slice) in indices is not supported")
        if not isinstance(t, _Tensor):
            t = flow.tensor(t)
        if t.dtype in (_C.dtype.bool, _C.dtype.uint8):
            at = len(out)
            want = tuple(input.shape[at : at + t.dim()])
            if tuple(t.shape) != want:
                raise IndexError(
                    f"[{name}] The shape of the mask {list(t.shape)} at index {at} does not match "
                    f"the shape of the indexed tensor {list(input.shape)} at index {at}"
                )
            out.extend(_mask_coordinates(name, t))
        elif t.dtype in (_C.dtype.int64, _C.dtype.int32, _C.dtype.int8):
            out.append(t.to(_C.dtype.int64))
        else:
            raise IndexError(
                f"[{name}] tensors used as indices must be long, int, byte or bool tensors, got "
                f"{t.dtype}"
            )
    if len(out) > input.dim():
        raise IndexError(
            f"[{name}] too many indices for tensor of dimension {input.dim()} (got {len(out)})"
        )
    return out


def _wrapped(name, idx, size, dim):
    """idx with negative entries counted from the end, checked against size."""
    if _on_host(idx) and idx.numel() and bool(((idx >= size) | (idx < -size)).any()):
        bad = idx[(idx >= size) | (idx < -size)].reshape(-1)[0].item()
        raise IndexError(
            f"[{name}] index {bad} is out of bounds for dimension {dim} with size {size}"
        )
    return flow.where(idx < 0, idx + size, idx)


def _check_same_dtype(name, input, values):
    if values.dtype != input.dtype:
        raise RuntimeError(
            f"[{name}] requires the source and destination dtypes match, got {input.dtype} for "
            f"the destination and {values.dtype} for the source"
        )


def index_put(input, indices, values, accumulate=False):
    """A copy of input with input[indices] = values (accumulate: += , duplicate indices add
    up). indices: integer or bool tensors for the leading dimensions."""
    idx = _index_list("index_put", input, indices)
    if not isinstance(values, _Tensor):
        values = flow.tensor(values, dtype=input.dtype, device=input.device)
    _check_same_dtype("index_put", input, values)
    shape = tuple(input.shape)
    if not idx:
        return (input + values) if accumulate else values.expand(*shape).clone()
    idx = list(flow.broadcast_tensors(*idx)) if len(idx) > 1 else idx
    m = len(idx)
    linear = None
    for k, t in enumerate(idx):
        t = _wrapped("index_put", t, shape[k], k)
        linear = t if linear is None else linear * shape[k] + t
    rest = shape[m:]
    picked = tuple(linear.shape) + rest
    try:
        vals = values.expand(*picked)
    except Exception:
        raise RuntimeError(
            f"[index_put] shape mismatch: value tensor of shape {list(values.shape)} cannot be "
            f"broadcast to indexing result of shape {list(picked)}"
        ) from None
    flat = input.reshape((math.prod(shape[:m]),) + rest)
    vals, linear = vals.reshape((-1,) + rest), linear.reshape(-1)
    out = flat.index_add(0, linear, vals) if accumulate else flat.index_copy(0, linear, vals)
    return out.reshape(shape)


def put(input, index, source, accumulate=False):
    """A copy of input with its row-major elements at index replaced by source's (accumulate:
    added, duplicates adding up)."""
    if index.dtype != _C.dtype.int64:
        raise RuntimeError(f"[put] Expected a long tensor for index, got {index.dtype}")
    _check_same_dtype("put", input, source)
    if index.numel() != source.numel():
        raise RuntimeError(
            f"[put] Expected source and index to have the same number of elements, but got "
            f"source.numel() = {source.numel()}, index.numel() = {index.numel()}"
        )
    flat = input.reshape(-1)
    if input.numel() == 0 and index.numel():
        raise IndexError("[put] cannot put into an empty tensor")
    idx = _wrapped("put", index.reshape(-1), input.numel(), 0)
    src = source.reshape(-1)
    out = flat.index_add(0, idx, src) if accumulate else flat.index_copy(0, idx, src)
    return out.reshape(tuple(input.shape))


def _written(self, result):
    """self overwritten with result, in place (copy_ carries autograd and the leaf check)."""
    return self.copy_(result)


def _source(self):
    # The op may save its input for backward: under autograd it reads a clone of self.
    return self.clone() if self.requires_grad and _C.is_grad_enabled() else self


def index_put_(input, indices, values, accumulate=False):
    return _written(input, index_put(_source(input), indices, values, accumulate))


def _put_(self, index, source, accumulate=False):
    return _written(self, put(_source(self), index, source, accumulate))


def zero_(input):
    """Fills input with zeros, in place."""
    return input.zero_()


# ---- resize, dtype shorthands, conjugate transposes --------------------------------------------


def _resize_(self, *sizes, memory_format=None):
    """self becomes of shape `sizes`, keeping its first elements in row-major order; new
    elements are zeros (PyTorch leaves them uninitialised). Other views of self's old storage
    do not follow: this replaces self's data."""
    size = _size_args("resize_", sizes)
    if any(n < 0 for n in size):
        raise RuntimeError(f"[resize_] Trying to create tensor with negative dimension: {size}")
    if self.requires_grad:
        raise RuntimeError("[resize_] cannot resize variables that require grad")
    flat = self.detach().reshape(-1)
    n = math.prod(size)
    if n <= flat.numel():
        data = flat.narrow(0, 0, n).clone()
    else:
        data = flow.cat([flat, flow.zeros(n - flat.numel(), dtype=self.dtype, device=self.device)])
    self.data = data.reshape(size)
    return self


def resize_as_(input, the_template, *, memory_format=None):
    return _resize_(input, tuple(the_template.shape))


def _dtype_method(name, dtype_name):
    def convert(self, memory_format=None):
        dtype = getattr(_C.dtype, dtype_name, None)
        if dtype is None:
            raise NotImplementedError(
                f"[Tensor.{name}] oneflowlike has no {dtype_name} dtype yet, so {name}() cannot "
                f"convert a tensor of {self.dtype}"
            )
        return self.to(dtype)

    convert.__name__ = name
    convert.__doc__ = f"self.to({dtype_name})"
    return convert


def _conj(x):
    return x.conj() if x.is_complex() else x


def _H(self):
    """The conjugate transpose of a matrix (a 0-d tensor: its conjugate)."""
    if self.dim() not in (0, 2):
        raise RuntimeError(
            f"tensor.H is only supported on matrices (2-D tensors). Got {self.dim()}-D tensor."
        )
    return _conj(self if self.dim() == 0 else self.transpose(0, 1))


def _mH(self):
    """The conjugate transpose of the last two dimensions (a 0-d tensor: its conjugate)."""
    if self.dim() == 1:
        raise RuntimeError(
            "tensor.mH is only supported on matrices or batches of matrices. Got 1-D tensor."
        )
    return _conj(self if self.dim() == 0 else self.transpose(-2, -1))


def _install(tensor_type):
    methods = {
        "new_empty_strided": _new_empty_strided,
        "index_put": index_put,
        "index_put_": index_put_,
        "put": put,
        "put_": _put_,
        "resize_": _resize_,
        "resize_as_": resize_as_,
    }
    for name, dtype_name in (
        ("byte", "uint8"),
        ("char", "int8"),
        ("short", "int16"),
        ("cfloat", "complex64"),
        ("cdouble", "complex128"),
        ("chalf", "complex32"),
    ):
        methods[name] = _dtype_method(name, dtype_name)
    for name, fn in methods.items():
        if not hasattr(tensor_type, name):
            setattr(tensor_type, name, fn)
    for name, fn in (("H", _H), ("mH", _mH)):
        if not hasattr(tensor_type, name):
            setattr(tensor_type, name, property(fn))


_install(_Tensor)


class _AtenOp:
    """torch.ops.aten.<name>: callable, with the overloads OpInfo uses (.default, .Tensor)."""

    def __init__(self, name, fn):
        self.__name__, self._fn = name, fn
        self.default = self.Tensor = self

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)


class _Aten:
    """The ATen-only functions torch's tests reach as torch.ops.aten.<name>."""

    def __init__(self, fns):
        self._ops = {fn.__name__: _AtenOp(fn.__name__, fn) for fn in fns}

    def __getattr__(self, name):
        try:
            return self.__dict__["_ops"][name]
        except KeyError:
            raise AttributeError(
                f"flow.ops.aten has no {name!r}; it holds only {sorted(self._ops)}"
            ) from None


class _Ops:
    def __init__(self, aten):
        self.aten = aten


ops = _Ops(
    _Aten(
        [
            getattr(_views, n)
            for n in ("slice", "as_strided", "as_strided_scatter", "constant_pad_nd")
        ]
        + [getattr(_native, n) for n in _native_all]
    )
)

if not hasattr(flow.nn.functional, "multi_head_attention_forward"):
    flow.nn.functional.multi_head_attention_forward = multi_head_attention_forward
