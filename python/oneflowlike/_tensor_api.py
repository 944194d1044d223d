"""The Tensor class's Python-side methods (installed on _C.Tensor at import) and the small
functions beside them: comparisons, torch.Size, the typed tensor classes (LongTensor, ...),
hooks' handles, index_copy and unique_consecutive. Creation and placement are _creation.py's."""

import builtins

import numpy as np

from . import _C
from ._creation import _rebuild_tensor, tensor
from ._dlpack import _dlpack_source
from ._tensor_str import _repr
from .utils import global_view

_py_bool, _py_int = builtins.bool, builtins.int


def allclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=False):
    return _py_bool(np.allclose(np.asarray(a), np.asarray(b), rtol, atol, equal_nan))


def equal(input, other):
    """True when input and other have the same shape and elements (torch.equal: a bool)."""
    return bool(_C.equal(input, other))


def numel(t):
    return t.numel()


def is_tensor(obj):
    return isinstance(obj, _C.Tensor)


class _TensorTypeMeta(type):
    """torch.LongTensor and its kind: isinstance(t, flow.LongTensor) checks t's dtype."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, _C.Tensor) and obj.dtype == cls.dtype

    def __call__(cls, *args):
        """LongTensor([1, 2]) holds that data; LongTensor(2, 3) is that shape (zeros)."""
        if len(args) == 1 and not isinstance(args[0], _py_int):
            return tensor(args[0], dtype=cls.dtype)
        return _C.zeros(*args, dtype=cls.dtype)


def _tensor_types():
    names = {
        "FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
        "BFloat16Tensor": "bfloat16", "ByteTensor": "uint8", "CharTensor": "int8",
        "IntTensor": "int32", "LongTensor": "int64", "BoolTensor": "bool",
    }  # fmt: skip
    return {n: _TensorTypeMeta(n, (), {"dtype": getattr(_C.dtype, d)}) for n, d in names.items()}


class Size(tuple):
    """A tensor's shape (Tensor.shape, Tensor.size()): a tuple of ints, with numel()."""

    def numel(self):
        n = 1
        for d in self:
            n *= d
        return n

    def __repr__(self):
        return f"oneflowlike.Size({list(self)!r})"

    def __getitem__(self, key):
        got = tuple.__getitem__(self, key)
        return Size(got) if isinstance(key, slice) else got

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))


class _HookHandle:
    """What Tensor.register_hook returns: remove() unregisters the hook (a context manager too)."""

    def __init__(self, tensor, hook_id):
        self._tensor, self.id = tensor, hook_id

    def remove(self):
        if self._tensor is not None:
            self._tensor._remove_hook(self.id)
            self._tensor = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _index_along(self, dim, index, source, op):
    """index_copy's 1-d index as scatter's: laid along dim of source's shape, checked."""
    n = self.dim()
    if not -max(n, 1) <= dim < max(n, 1):
        raise IndexError(f"[{op}] dim {dim} is out of range for a {n}-d tensor")
    dim %= max(n, 1)
    if index.dim() > 1:
        raise IndexError(f"[{op}] index must be 0-d or 1-d, got shape {tuple(index.shape)}")
    if index.dtype not in (_C.dtype.int64, _C.dtype.int32):
        raise IndexError(f"[{op}] index must be int64 or int32, got {index.dtype}")
    if n == 0 and index.numel() != 1:
        raise IndexError(f"[{op}] a 0-d tensor takes one index, got {index.numel()}")
    index = index.reshape(-1)
    want = list(self.shape)
    if n:
        want[dim] = index.numel()
    if list(source.shape) != want:
        raise ValueError(
            f"[{op}] source of shape {tuple(source.shape)} does not match self of shape "
            f"{tuple(self.shape)} with {index.numel()} indices along dim {dim}: want {tuple(want)}"
        )
    if n == 0:
        return index.reshape(())
    shape = [1] * n
    shape[dim] = -1
    return index.view(*shape).expand(*want)


def index_copy(input, dim, index, source):
    """torch.index_copy: Tensor.index_copy."""
    return input.index_copy(dim, index, source)


def _install_tensor_methods():
    T = _C.Tensor
    T.__repr__ = _repr
    T.__str__ = _repr
    T.__array_priority__ = 1000  # numpy defers to our reflected operators

    def __deepcopy__(self, memo):
        copy = self.detach().clone()
        if self.requires_grad and self.is_leaf:
            copy.requires_grad_(True)
        memo[id(self)] = copy
        return copy

    def type_as(self, other):
        return self.to(other.dtype)

    T.equal = equal

    def index_copy_(self, dim, index, source):
        """source's slices along dim written at self's positions index (1-d), in place:
        torch.Tensor.index_copy_ (a static KV cache's write, as Hugging Face's StaticCache
        does it), as scatter_ with index laid along dim."""
        return self.scatter_(dim, _index_along(self, dim, index, source, "index_copy_"), source)

    def index_copy(self, dim, index, source):
        """A copy of self with source's slices along dim at positions index (index_copy_)."""
        return self.scatter(dim, _index_along(self, dim, index, source, "index_copy"), source)

    # On self's device, as PyTorch's.
    def new_tensor(self, data, dtype=None):
        return tensor(data, dtype=dtype or self.dtype, device=self.device)

    def __format__(self, spec):  # a 0-d tensor formats as its number, as PyTorch's
        if self.dim() == 0 and not self.is_traced and self.device.type != "meta":
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __reduce__(self):  # pickle: the data as a numpy array, then dtype, grad and device
        if self.is_global:
            raise TypeError(
                "[pickle] a global tensor has no single buffer: pickle to_local() shards, or "
                "flow.save it (distributed checkpoints)"
            )
        if self.device.type == "meta" or self.is_traced:
            raise TypeError(f"[pickle] a {self.device.type} tensor has no data to pickle")
        data = self.detach().cpu()
        data = data.float() if data.dtype == _C.dtype.bfloat16 else data
        args = (np.ascontiguousarray(data.numpy()), repr(self.dtype), self.requires_grad,
                str(self.device), type(self))  # fmt: skip
        return _rebuild_tensor, args

    def __dlpack__(self, **kwargs):
        return _dlpack_source(self, "__dlpack__").__dlpack__(**kwargs)

    def __dlpack_device__(self):
        _dlpack_source(self, "__dlpack_device__")
        return (1, 0)  # kDLCPU

    def register_hook(self, hook):
        """hook(grad) runs when the gradient for this tensor is computed; a tensor it returns
        replaces the gradient. Returns a handle whose remove() unregisters it."""
        return _HookHandle(self, self._register_hook(hook))

    def register_post_accumulate_grad_hook(self, hook):
        """Leaf only: hook(tensor) runs once tensor.grad holds this backward's gradient."""
        return _HookHandle(self, self._register_post_accumulate_grad_hook(hook))

    shape_of, size_of, device_of = T.shape, T.size, T.device

    def device(self):  # a global tensor's carries its placement: creation ops given it follow
        d = device_of.__get__(self)
        return global_view.GlobalDevice(d, _C.global_placement(self)) if self.is_global else d

    def size(self, dim=None):
        return Size(size_of(self)) if dim is None else size_of(self, dim)

    T.shape = property(lambda self: Size(shape_of.__get__(self)), doc=shape_of.__doc__)
    T.is_local = property(lambda self: not self.is_global, doc="Not a global tensor.")
    T.device = property(device, doc=device_of.__doc__)
    T.real = property(_C.real, doc="The real part (a view); a real tensor itself.")
    T.imag = property(_C.imag, doc="The imaginary part of a complex tensor (a view).")
    T.is_complex = lambda self: self.dtype == _C.dtype.complex64
    T.is_cpu = property(lambda self: self.device.type == "cpu", doc="On a CPU device.")
    T.is_cuda = property(lambda self: self.device.type == "cuda", doc="On a CUDA device.")
    T.is_meta = property(lambda self: self.device.type == "meta", doc="On the meta device.")
    T.is_signed = lambda self: self.dtype not in (_C.dtype.bool, _C.dtype.uint8)
    T.is_same_size = lambda self, other: tuple(self.shape) == tuple(other.shape)
    # Devices and layouts this build never makes: torch.Tensor's flags for them are False.
    for flag in ("is_xpu", "is_mps", "is_mkldnn", "is_quantized", "is_sparse", "is_sparse_csr",
                 "is_nested", "is_vulkan", "is_ipu", "is_hpu", "is_xla", "is_mtia", "is_maia",
                 "is_inference_tensor"):  # fmt: skip
        if not hasattr(T, flag):
            setattr(T, flag, property(lambda self: False, doc="False: no such tensors here."))
    for fn in (
        __reduce__,
        __format__,
        __dlpack__,
        __dlpack_device__,
        size,
        __deepcopy__,
        type_as,
        index_copy_,
        index_copy,
        new_tensor,
        register_hook,
        register_post_accumulate_grad_hook,
    ):
        setattr(T, fn.__name__, fn)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """torch.unique_consecutive: keeps the first of each run of equal consecutive elements (dim
    None: of the flattened input) or slices along dim; with the inverse (where each element or
    slice went) and the counts (each run's length) as int64 tensors. Eager only: its output size
    depends on the data, so it is computed on the host (numpy) and laid on input's device."""
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"unique_consecutive: expects a tensor, got {type(input).__name__}")
    if input.is_traced or input.device.type == "meta" or input.is_global:
        kind = "traced" if input.is_traced else "meta" if input.device.type == "meta" else "global"
        raise RuntimeError(
            f"unique_consecutive: its output size depends on the data, which a {kind} tensor of "
            f"shape {tuple(input.shape)} does not have here (call it on a local tensor eagerly)"
        )
    x = input.detach()
    if x.device.type != "cpu":
        x = x.cpu()
    if x.dtype == _C.dtype.bfloat16:
        x = _C.to_dtype(x, _C.dtype.float32)  # numpy has no bfloat16; equality is unchanged
    arr = np.array(x.numpy(), order="C")
    shape = arr.shape
    if dim is None:
        flat = arr.reshape(-1)
        starts = np.ones(flat.shape[0], dtype=bool)
        starts[1:] = flat[1:] != flat[:-1]
        values = flat[starts]
        inverse_shape = shape
    else:
        if arr.ndim == 0:
            raise IndexError(
                f"unique_consecutive: dim {dim} given for a 0-d tensor: it has no dimensions"
            )
        if not -arr.ndim <= dim < arr.ndim:
            raise IndexError(
                f"unique_consecutive: dim {dim} is out of range for a tensor of shape {shape}"
            )
        d = dim % arr.ndim
        if any(n == 0 for i, n in enumerate(shape) if i != d):
            raise RuntimeError(
                f"unique_consecutive: the input {shape} has a dimension of size 0 other than dim "
                f"{dim}: there are no slices to compare"
            )
        rows = np.moveaxis(arr, d, 0).reshape(shape[d], arr.size // max(shape[d], 1))
        starts = np.ones(rows.shape[0], dtype=bool)
        starts[1:] = np.any(rows[1:] != rows[:-1], axis=1)
        values = np.take(arr, np.nonzero(starts)[0], axis=d)
        inverse_shape = (rows.shape[0],)

    def laid(a, dtype):
        t = _C.from_numpy(np.array(a, order="C"))  # keeps 0-d arrays 0-d
        if t.dtype != dtype:
            t = _C.to_dtype(t, dtype)
        return t if input.device.type == "cpu" else t.to(input.device)

    out = laid(values, input.dtype)
    if not return_inverse and not return_counts:
        return out
    result = (out,)
    if return_inverse:
        inverse = (np.cumsum(starts) - 1).astype(np.int64).reshape(inverse_shape)
        result += (laid(inverse, _C.dtype.int64),)
    if return_counts:
        edges = np.append(np.nonzero(starts)[0], starts.shape[0])
        result += (laid(np.diff(edges).astype(np.int64), _C.dtype.int64),)
    return result


_C.Tensor.unique_consecutive = unique_consecutive
