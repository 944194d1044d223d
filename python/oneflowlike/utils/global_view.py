"""flow.utils.global_view, as OneFlow's: global_mode (creation ops make global tensors inside it),
current_global_mode, and to_global / to_local over a tensor, list, tuple or dict (state dicts).

Also what creation ops ask (through _creation.py): the layout a new tensor takes, from the global
mode or from a global tensor's device (`flow.arange(n, device=x.device)` with x global)."""

import threading
import warnings

from .. import _C
from .. import _global, distributed

# One stack per thread, as OneFlow's GlobalMode is thread-local; the bottom entry is "disabled".
_state = threading.local()


def _modes():
    stack = getattr(_state, "modes", None)
    if stack is None:
        stack = _state.modes = [(False, None, None)]
    return stack


def _check_mode(placement, sbp):
    """The mode's (placement, NdSbp): sbp defaults to broadcast on every mesh axis."""
    if placement is None:
        raise ValueError(
            "[global_mode] needs placement= when enabled, e.g. "
            'global_mode(True, placement=flow.placement("cpu", ranks=[0, 1]))'
        )
    if not isinstance(placement, _C.Placement):
        raise TypeError(
            f"[global_mode] placement must be a flow.placement, got {type(placement).__name__} "
            f"{placement!r}"
        )
    if sbp is None:
        return placement, _C.NdSbp([_C.Sbp.broadcast()] * placement.ndim)
    entries = list(sbp) if isinstance(sbp, (list, tuple, _C.NdSbp)) else [sbp]
    bad = [s for s in entries if not isinstance(s, _C.Sbp)]
    if bad or not entries:
        raise TypeError(
            f"[global_mode] sbp must be flow.sbp values (one per mesh axis of "
            f"{placement.to_string()}), got {sbp!r}"
        )
    if len(entries) != placement.ndim:
        raise ValueError(
            f"[global_mode] sbp {_C.NdSbp(entries).to_string()} has {len(entries)} entries for "
            f"the {placement.ndim}-d placement {placement.to_string()} (one per mesh axis)"
        )
    return placement, _C.NdSbp(entries)


class global_mode:
    """A scope in which creation ops (flow.zeros, randn, arange, tensor, ...) make global
    tensors on `placement` with `sbp` (broadcast on every mesh axis when not given; OneFlow
    requires it), so that one-device model code runs on global tensors unchanged. A device given
    to a creation op inside picks the placement's device type (device="cuda" on a cpu placement
    gives a cuda placement of the same ranks). Random ops give the same logical tensor on every
    rank: the placement's first rank's draw. `global_mode(False)` turns it off inside."""

    def __init__(self, enabled, placement=None, sbp=None):
        if enabled:
            placement, nd = _check_mode(placement, sbp)
            self._mode = (True, placement, nd)
        else:
            self._mode = (False, None, None)

    def __enter__(self):
        _modes().append(self._mode)
        return self

    def __exit__(self, *exc):
        _modes().pop()
        return False


class current_global_mode:
    """The global mode in force where it is made: is_enabled, placement and sbp (a tuple of
    flow.sbp values, one per mesh axis; None and None when disabled)."""

    def __init__(self):
        self._enabled, self._placement, self._nd = _modes()[-1]

    @property
    def is_enabled(self):
        return self._enabled

    @property
    def placement(self):
        return self._placement

    @property
    def sbp(self):
        return None if self._nd is None else tuple(self._nd)

    def __repr__(self):
        if not self._enabled:
            return "current_global_mode(is_enabled=False)"
        return (
            f"current_global_mode(is_enabled=True, placement={self._placement.to_string()}, "
            f"sbp={self._nd.to_string()})"
        )


class GlobalDevice(_C.device):
    """A global tensor's `.device`: prints, compares and has `.type` / `.index` as this rank's
    device, and carries the tensor's `placement`, so that a creation op given it makes a
    broadcast global tensor there (model code's `flow.arange(T, device=idx.device)`)."""

    def __init__(self, device, placement):
        super().__init__(str(device))
        self.placement = placement


def creation_layout(device):
    """(placement, NdSbp) a creation op given `device` lays its result out with, or None for a
    local result: the global mode's (the device, if given, picks the device type), else a global
    tensor's device's placement, broadcast."""
    enabled, placement, nd = _modes()[-1]
    if enabled:
        kind = None
        if device is not None:
            kind = device.type if isinstance(device, _C.device) else _C.device(str(device)).type
        if kind in ("cpu", "cuda") and kind != placement.type:
            placement = _C.Placement(kind, placement.ranks)
        return placement, nd
    if isinstance(device, GlobalDevice):
        p = device.placement
        return p, _C.NdSbp([_C.Sbp.broadcast()] * p.ndim)
    return None


def like_layout(t):
    """The layout a *_like op's result takes in global mode when `t` is local (None otherwise:
    a global `t` gives its own layout, a local one outside the mode a local result)."""
    if t.is_global or not _modes()[-1][0]:
        return None
    return creation_layout(t.device)


def build_device(device, layout):
    """Where a creation op builds the whole tensor before it is laid out: meta stays meta,
    anything else this rank's device of the placement (no copy afterwards)."""
    if device is not None and str(device).startswith("meta"):
        return _C.device("meta")
    return _C.device(_global.shard_device(layout[0]))


def lay_out(op, full, layout, sync_data):
    """`full`, the whole tensor built on every rank, as a global tensor with `layout`. Given
    data or drawn at random (sync_data), the placement's first rank's is the logical tensor."""
    placement, nd = layout
    try:
        return _global.from_full(full, placement, nd, sync_data)
    except (RuntimeError, ValueError, TypeError) as e:
        msg = str(e)
        raise type(e)(
            f"[{op}] cannot make a global tensor of shape {tuple(full.shape)} on "
            f"{placement.to_string()} with sbp {nd.to_string()}: {msg}"
        ) from None


def same_on_every_rank(full, placement):
    """The placement's first rank's `full` on every rank of it: a random draw stays one logical
    tensor when ranks are seeded differently."""
    if full.device.type == "meta" or not placement.contains(distributed.get_rank()):
        return full
    whole = _C.NdSbp([_C.Sbp.broadcast()] * placement.ndim)
    return _global.from_full(full, placement, whole, sync_data=True).to_local()


def _map(value, fn, warn):
    if isinstance(value, _C.Tensor):
        return fn(value)
    if isinstance(value, dict):
        out = type(value)() if type(value) is not dict else {}
        for k, v in value.items():
            out[k] = _map(v, fn, warn)
        return out
    if isinstance(value, (list, tuple)):
        items = [_map(v, fn, warn) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if value is not None and warn:
        warnings.warn(
            f"Non-Tensor type: {type(value).__name__} encountered, it will remain the same."
        )
    return value


def to_global(input, placement=None, sbp=None, warn_on_non_tensor_leaf=True, **kwargs):
    """Every tensor in `input` (a tensor, or a list / tuple / dict of them, nested, such as a
    state dict) made global as Tensor.to_global does; other leaves stay as they are (with a
    warning unless warn_on_non_tensor_leaf=False). `sbp` may be a function (input, tensor) ->
    sbp to give tensors different layouts. Local tensors need placement and sbp; global ones
    are resharded (keeping what is not given)."""

    def one(t):
        s = sbp(input, t) if callable(sbp) and not isinstance(sbp, _C.Sbp) else sbp
        if not t.is_global and (placement is None or s is None):
            raise ValueError(
                f"[to_global] a local tensor of shape {tuple(t.shape)} needs placement= and sbp="
            )
        return t.to_global(placement=placement, sbp=s, **kwargs)

    return _map(input, one, warn_on_non_tensor_leaf)


def to_local(input, *, copy=False):
    """Every global tensor in `input` (a tensor, or a list / tuple / dict of them) replaced by
    this rank's shard; local tensors stay (with a warning, as OneFlow's)."""

    def one(t):
        if not t.is_global:
            warnings.warn("The tensor should be global, local tensor will remain the same.")
            return t
        local = t.to_local()
        return local.clone() if copy else local

    return _map(input, one, True)


__all__ = ["global_mode", "current_global_mode", "to_global", "to_local"]
