"""Creation functions and Python-level helpers with PyTorch's argument conventions."""

import builtins
import contextlib
import functools

import numpy as np

from . import _C

_py_bool, _py_int, _py_float = builtins.bool, builtins.int, builtins.float


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


# The device creation ops use when none is given: set_default_device, or `with flow.device(d):`.
_default_devices = [None]


def set_default_device(device):
    """Creation ops without a ``device=`` argument create on ``device`` (None: the cpu)."""
    _default_devices[-1] = None if device is None else _resolve_device(device)


def get_default_device():
    return _default_devices[-1] or _C.device("cpu")


def _device_enter(self):
    _default_devices.append(self)
    return self


def _device_exit(self, *exc):
    _default_devices.pop()


_C.device.__enter__, _C.device.__exit__ = _device_enter, _device_exit


def _resolve_device(device):
    if device is None:
        device = _default_devices[-1]
        if device is None:
            return None
    d = device if isinstance(device, _C.device) else _C.device(str(device))
    if d.type == "cuda":
        from . import cuda

        cuda._index(d.index)  # raises naming the device when it is not there
    return d


_global_view = []  # utils.global_view, imported on first use (utils imports the whole package)


def _gv():
    if not _global_view:
        from .utils import global_view

        _global_view.append(global_view)
    return _global_view[0]


def _create(op, build, device, requires_grad=False, sync_data=False):
    """build(device) makes the whole tensor (device None: the cpu). In global mode, or given a
    global tensor's device, it is laid out as a global tensor (utils/global_view.py says how)."""
    gv = _gv()
    layout = gv.creation_layout(device)
    if layout is None:
        return _finish(build(_resolve_device(device)), requires_grad)
    full = build(gv.build_device(device, layout))
    return _finish(gv.lay_out(op, full, layout, sync_data), requires_grad)


def _place(op, build, device, placement, sbp, requires_grad, random, data=False):
    """Where a creation op's tensor goes: every creation signature of the registry comes here
    (python/src/op_binding.cpp's create), with build(device) running its row. The default
    device, the global mode or a global tensor's device (_create), or placement= and sbp=: every
    rank builds the whole tensor and keeps its shard. Fills and draws (by logical element index)
    build the same tensor on ranks seeded alike and communicate nothing; given data, ranks may
    hold different data, and the placement's first rank's is the logical tensor."""
    if placement is None:
        if sbp is not None:
            raise ValueError(f"[{op}] sbp= needs placement=")
        return _create(op, build, device, requires_grad, sync_data=random or data)
    from . import _global

    with _gv().global_mode(False):  # the given layout, not the global mode's
        full = _create(op, build, device)
    return _finish(_global.from_full(full, placement, sbp, data), requires_grad)


def _place_like(op, build, t, device, requires_grad, random):
    """zeros_like(t) and its kin (op_binding.cpp's create): a global `t` gives its placement and
    layout (fills by the full_like op, each rank filling its shard; other rows build the whole
    tensor, laid out as t is); a local `t` in global mode gives a global tensor."""
    gv = _gv()
    layout = gv.like_layout(t)
    if layout is not None:
        out = gv.lay_out(op, build(gv.build_device(t.device, layout)), layout, random)
    else:
        out = build(None if device is None else _resolve_device(device))
        if t.is_global and not out.is_global:
            if random:  # one draw: the placement's first rank's
                out = gv.same_on_every_rank(out, t.placement)
            from . import _global

            out = _C.global_from_full(out, t.placement, _C.global_sbp(t), _global._world())
    return _finish(out, requires_grad)


def tensor(data, dtype=None, device=None, requires_grad=False, placement=None, sbp=None):
    """A new tensor holding a copy of `data` (nested lists, numbers, numpy arrays, tensors);
    global with placement= and sbp=, or in global mode (the placement's first rank's data is
    the logical tensor, as OneFlow's)."""
    if isinstance(data, _C.Tensor):
        t = data.detach().clone()
    else:
        arr = np.array(data, order="C")
        python_floats = not isinstance(data, (np.ndarray, np.generic))
        if arr.dtype == np.float64 and python_floats and dtype is None:
            arr = arr.astype(np.float32)  # Python floats default to float32, as in PyTorch
        if arr.dtype == np.complex128 and python_floats and dtype is None:
            arr = arr.astype(np.complex64)  # and Python complex numbers to complex64
        if arr.dtype.kind in "iu" and arr.dtype not in (np.int8, np.uint8, np.int32, np.int64):
            arr = arr.astype(np.int64)
        if arr.dtype.kind == "U" or arr.dtype == object:
            raise TypeError(f"[tensor] cannot build a tensor from {type(data).__name__} data")
        t = _C.from_numpy(np.asarray(arr, order="C"))  # keeps 0-d arrays 0-d
    if dtype is not None and t.dtype != dtype:
        t = _C.to_dtype(t, dtype)
    if t.is_global and placement is None:
        return _finish(t, requires_grad)
    build = lambda d: t if d is None else t.to(d)  # noqa: E731
    return _place("tensor", build, device, placement, sbp, requires_grad, False, data=True)


def as_tensor(data, dtype=None, device=None):
    d = _resolve_device(device)
    if _gv().creation_layout(device) is not None and not getattr(data, "is_global", False):
        return tensor(data, dtype=dtype, device=device)
    if isinstance(data, _C.Tensor) and (dtype is None or data.dtype == dtype):
        return data if d is None else data.to(d)
    if isinstance(data, np.ndarray) and (dtype is None):
        t = _C.from_numpy(data)  # shares the array's memory on the host
        return t if d is None else t.to(d)
    return tensor(data, dtype=dtype, device=device)


def _rebuild_tensor(array, dtype, requires_grad, device, cls):
    """What pickle rebuilds a tensor from (Tensor.__reduce__)."""
    t = _C.from_numpy(array)
    if repr(t.dtype) != dtype:
        t = t.to(getattr(_C.dtype, dtype.split(".")[-1]))
    if device != "cpu":
        t = t.to(device)
    if cls is not _C.Tensor:
        t = cls(t)
    return t.requires_grad_(requires_grad) if requires_grad or t.requires_grad else t


def allclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=False):
    return _py_bool(np.allclose(np.asarray(a), np.asarray(b), rtol, atol, equal_nan))


def equal(input, other):
    """True when input and other have the same shape and elements (torch.equal: a bool)."""
    return bool(_C.equal(input, other))


def numel(t):
    return t.numel()


def is_tensor(obj):
    return isinstance(obj, _C.Tensor)


class _GradMode:
    """A context manager and decorator that sets grad mode, like torch.no_grad."""

    def __init__(self, enabled):
        self._enabled = enabled
        self._prev = []

    def __enter__(self):
        self._prev.append(_C.is_grad_enabled())
        _C.set_grad_enabled(self._enabled)

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._prev.pop())
        return False

    def __call__(self, fn):
        enabled = self._enabled

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with _GradMode(enabled):
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_GradMode):
    def __init__(self):
        super().__init__(False)


class enable_grad(_GradMode):
    def __init__(self):
        super().__init__(True)


class set_grad_enabled(_GradMode):
    """Sets grad mode immediately (as a call) and restores it when used as a context."""

    def __init__(self, mode):
        super().__init__(_py_bool(mode))
        self._prev.append(_C.is_grad_enabled())
        _C.set_grad_enabled(self._enabled)

    def __enter__(self):
        pass


class inference_mode(_GradMode):
    """PyTorch's inference_mode: no autograd recording inside (here the same as no_grad: this
    framework keeps no version counters to skip). A context manager and a decorator, with or
    without the call: `@flow.inference_mode` and `@flow.inference_mode()`; `mode=False` records
    as usual."""

    def __new__(cls, mode=True):
        if callable(mode) and not isinstance(mode, _py_bool):  # the bare decorator
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        super().__init__(not _py_bool(mode))


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


class finfo:
    """A floating dtype's limits, as torch.finfo: bits, eps, max, min, tiny (smallest_normal),
    resolution."""

    _BF16 = dict(bits=16, eps=0.0078125, max=3.3895313892515355e38, tiny=1.1754943508222875e-38,
                 resolution=0.01)  # fmt: skip

    def __init__(self, type=None):
        type = type if type is not None else _C.dtype.float32
        if type == _C.dtype.bfloat16:
            info = self._BF16
        elif type in (_C.dtype.float16, _C.dtype.float32, _C.dtype.float64):
            f = np.finfo(
                {_C.dtype.float16: np.float16, _C.dtype.float32: np.float32}.get(type, np.float64)
            )
            info = dict(bits=f.bits, eps=float(f.eps), max=float(f.max),
                        tiny=float(f.smallest_normal), resolution=10.0**-f.precision)  # fmt: skip
        else:
            raise TypeError(f"[finfo] {type!r} is not a floating dtype (iinfo is for integers)")
        self.dtype = repr(type).split(".")[-1]
        self.bits, self.eps, self.max, self.tiny = (
            info["bits"],
            info["eps"],
            info["max"],
            info["tiny"],
        )
        self.min, self.smallest_normal, self.resolution = -self.max, self.tiny, info["resolution"]

    def __repr__(self):
        return f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, eps={self.eps}, tiny={self.tiny}, dtype={self.dtype})"


class iinfo:
    """An integer dtype's limits, as torch.iinfo: bits, min, max."""

    def __init__(self, type):
        kinds = {_C.dtype.uint8: np.uint8, _C.dtype.int8: np.int8, _C.dtype.int32: np.int32,
                 _C.dtype.int64: np.int64, _C.dtype.bool: np.uint8}  # fmt: skip
        if type not in kinds:
            raise TypeError(f"[iinfo] {type!r} is not an integer dtype (finfo is for floats)")
        i = np.iinfo(kinds[type])
        self.bits, self.min, self.max = int(i.bits), int(i.min), int(i.max)
        if type == _C.dtype.bool:
            self.bits, self.max = 8, 1
        self.dtype = repr(type).split(".")[-1]

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


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


def _dlpack_source(t, op):
    """The zero-copy numpy view a DLPack exchange goes through (CPU and numpy's dtypes only)."""
    if t.is_global:
        raise TypeError(f"[{op}] a global tensor has no single buffer: to_local() it first")
    if t.device.type != "cpu":
        raise TypeError(
            f"[{op}] only CPU tensors are exchanged through DLPack here; this one is on "
            f"{t.device} (.cpu() it first)"
        )
    if t.dtype == _C.dtype.bfloat16:
        raise TypeError(f"[{op}] bfloat16 has no DLPack exchange here (.float() it first)")
    return t.detach().numpy()


class _Capsule:
    """A DLPack capsule as an object numpy's from_dlpack takes (it wants __dlpack__)."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


def from_dlpack(ext):
    """A tensor sharing the memory of `ext`: an object with __dlpack__ (a numpy array, a PyTorch
    or JAX CPU tensor) or a DLPack capsule (to_dlpack's). CPU memory and numpy's dtypes only."""
    if type(ext).__name__ == "PyCapsule":
        ext = _Capsule(ext)
    try:
        arr = np.from_dlpack(ext)
    except (BufferError, RuntimeError, TypeError, ValueError) as e:
        raise TypeError(
            f"[from_dlpack] cannot take {type(ext).__name__} through DLPack: {e} (CPU memory "
            "and numpy's dtypes only)"
        ) from None
    return _C.from_numpy(arr)


class _FloatFormat:
    """PyTorch's formatting of one part of a complex tensor (precision 4): whole numbers as "3.",
    else fixed or scientific by the range of the nonzero finite values, right-aligned."""

    def __init__(self, values):
        vals = values[np.isfinite(values) & (values != 0)].astype(np.float64)
        self.int_mode, self.sci_mode, self.width = True, False, 1
        if vals.size:
            lo, hi = np.abs(vals).min(), np.abs(vals).max()
            self.int_mode = builtins.bool(np.all(vals == np.ceil(vals)))
            small = not self.int_mode and lo < 1.0e-4
            self.sci_mode = builtins.bool(hi / lo > 1000.0 or hi > 1.0e8 or small)
            self.width = max(len(self._plain(v)) for v in vals)

    def _plain(self, v):
        if self.sci_mode:
            return f"{v:.4e}"
        if self.int_mode:
            return f"{v:.0f}" + ("" if np.isinf(v) or np.isnan(v) else ".")
        return f"{v:.4f}"

    def __call__(self, v):
        s = self._plain(v)
        return " " * (self.width - len(s)) + s


def _complex_body(arr, indent):
    """The values of a complex array as PyTorch's repr prints them (its _tensor_str)."""
    re, im = _FloatFormat(arr.real.ravel()), _FloatFormat(arr.imag.ravel())

    def value(v):
        v = builtins.complex(v)
        i = (im(v.imag) + "j").lstrip()
        return re(v.real) + (i if i[0] in "+-" else "+" + i)

    def body(a, indent):
        if a.ndim == 0:
            return value(a)
        if a.ndim == 1:
            per_line = max(1, (80 - indent) // (re.width + 3 + im.width + 1))
            items = [value(v) for v in a]
            lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
            return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
        parts = [body(a[i], indent + 1) for i in range(a.shape[0])]
        return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(parts) + "]"

    return body(arr, indent)


def _repr(t):
    prefix = "tensor("
    if t.is_traced:  # a symbolic value of a graph being traced: no data
        return f"{prefix}<traced>, size={tuple(t.shape)}, dtype={t.dtype!r}, device='{t.device}')"
    if t.device.type == "meta":  # PyTorch's spelling: no data to show
        body = f"..., device='meta', size={tuple(t.shape)}"
        if t.is_global:
            sbp = ", ".join(s.to_string() for s in t.sbp)
            body += f", placement={t.placement.to_string()}, sbp=({sbp})"
        if t.dtype not in (_C.dtype.float32, _C.dtype.int64, _C.dtype.bool, _C.dtype.complex64):
            body += f", dtype={t.dtype!r}"
        return prefix + body + (", requires_grad=True" if t.requires_grad else "") + ")"
    shown = t.float() if t.dtype == _C.dtype.bfloat16 else t.detach()
    if not t.is_global and t.device.type != "cpu":  # a global numpy() gathers from any device
        shown = shown.cpu()
    arr = shown.numpy()
    if arr.dtype == np.complex64 and arr.size <= 1000:  # larger ones: numpy's summary
        body = _complex_body(arr, len(prefix))
    else:
        body = np.array2string(arr, separator=", ", prefix=prefix)
    extras = []
    if not t.is_global and t.device.type != "cpu":
        extras.append(f"device='{t.device}'")
    default = {_C.dtype.float32, _C.dtype.int64, _C.dtype.bool, _C.dtype.complex64}
    if t.dtype not in default:
        extras.append(f"dtype={t.dtype!r}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn={t.grad_fn!r}")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return prefix + body + "".join(", " + e for e in extras) + ")"


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
        return _gv().GlobalDevice(d, _C.global_placement(self)) if self.is_global else d

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
