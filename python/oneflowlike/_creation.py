"""Creation and placement policy, in one place: where a new tensor goes. Every creation signature
of the op registry ends here (python/src/op_binding.cpp's create calls _place or _place_like with
a function that runs its row), as do flow.tensor and flow.as_tensor: the default device
(set_default_device, `with flow.device(d):`), placement= and sbp=, the global mode, a global
tensor's device or layout, and requires_grad."""

import numpy as np

from . import _C, _global, cuda
from .utils import global_view


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
        cuda._index(d.index)  # raises naming the device when it is not there
    return d


def _create(op, build, device, requires_grad=False, sync_data=False):
    """build(device) makes the whole tensor (device None: the cpu). In global mode, or given a
    global tensor's device, it is laid out as a global tensor (utils/global_view.py says how)."""
    layout = global_view.creation_layout(device)
    if layout is None:
        return _finish(build(_resolve_device(device)), requires_grad)
    full = build(global_view.build_device(device, layout))
    return _finish(global_view.lay_out(op, full, layout, sync_data), requires_grad)


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
    with global_view.global_mode(False):  # the given layout, not the global mode's
        full = _create(op, build, device)
    return _finish(_global.from_full(full, placement, sbp, data), requires_grad)


def _place_like(op, build, t, device, requires_grad, random):
    """zeros_like(t) and its kin (op_binding.cpp's create): a global `t` gives its placement and
    layout (fills by the full_like op, each rank filling its shard; other rows build the whole
    tensor, laid out as t is); a local `t` in global mode gives a global tensor."""
    layout = global_view.like_layout(t)
    if layout is not None:
        out = global_view.lay_out(
            op, build(global_view.build_device(t.device, layout)), layout, random
        )
    else:
        out = build(None if device is None else _resolve_device(device))
        if t.is_global and not out.is_global:
            if random:  # one draw: the placement's first rank's
                out = global_view.same_on_every_rank(out, t.placement)
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
    if global_view.creation_layout(device) is not None and not getattr(data, "is_global", False):
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
