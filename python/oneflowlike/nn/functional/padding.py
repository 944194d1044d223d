"""torch.nn.functional.pad: constant padding on the kernel, reflect / replicate / circular as
index_select composites (their gradients are index_add, so they differentiate everywhere)."""

import operator

import oneflowlike as flow

__all__ = ["pad"]

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _ntuple(value, n, name, fn="conv"):
    """`value` as an n-tuple of ints: one int repeated, or a sequence of n (or of 1)."""
    if isinstance(value, (list, tuple)):
        out = tuple(value)
        if len(out) == 1:
            out = out * n
    else:
        out = (value,) * n
    if len(out) != n:
        raise ValueError(f"[{fn}] {name} must be an int or a tuple of {n} ints, got {value!r}")
    try:
        return tuple(operator.index(v) for v in out)
    except TypeError:
        raise TypeError(f"[{fn}] {name} must be ints, got {value!r}") from None


def _index(values, device):
    return flow.tensor(list(values), dtype=flow.int64, device=device)


def _source(i, length, mode):
    """The input position that output position i (relative to the input's start) reads."""
    if mode == "reflect":
        i = -i if i < 0 else i
        return 2 * (length - 1) - i if i >= length else i
    return min(max(i, 0), length - 1)


def _pad_dim(input, dim, before, after, mode):
    length = input.shape[dim]
    if mode == "circular":
        # PyTorch crops first and wraps around what is left
        start, kept = max(-before, 0), length + min(before, 0) + min(after, 0)
        positions = range(-max(before, 0), kept + max(after, 0))
        index = [start + i % kept for i in positions]
    else:
        index = [_source(i, length, mode) for i in range(-before, length + after)]
    if index == list(range(length)):
        return input
    return input.index_select(dim, _index(index, input.device))


def _check_non_constant(input, pad, mode, value):
    shape = tuple(input.shape)
    if value is not None and value != 0:
        raise RuntimeError(f'[pad] padding mode "{mode}" doesn\'t take in value argument')
    n = len(pad) // 2
    if n > 3 or input.ndim not in (n + 1, n + 2):
        raise NotImplementedError(
            f"[pad] padding size {len(pad)} is not supported for {input.ndim}D input {shape} in "
            f"mode '{mode}'; non-constant padding takes a 2D or 3D input for 2 amounts, 3D or 4D "
            f"for 4, 4D or 5D for 6"
        )
    for k in range(n):
        dim = input.ndim - 1 - k
        before, after, length = pad[2 * k], pad[2 * k + 1], shape[dim]
        if mode == "reflect" and (before >= length or after >= length):
            raise RuntimeError(
                f"[pad] reflect padding ({before}, {after}) should be less than the size "
                f"{length} of dimension {dim} of input {shape}"
            )
        kept = length + min(before, 0) + min(after, 0)
        if mode == "circular" and (kept < 1 or before > kept or after > kept):
            raise RuntimeError(
                f"[pad] circular padding ({before}, {after}) of dimension {dim} of input {shape} "
                f"wraps around more than once"
            )
        if mode == "replicate" and length == 0 and (before > 0 or after > 0):
            raise RuntimeError(f"[pad] cannot replicate-pad the empty dimension {dim} of {shape}")


def _pad_empty(input, pad, value):
    """Constant padding of a tensor without elements: the result is all `value`."""
    shape = list(input.shape)
    for k in range(len(pad) // 2):
        dim = input.ndim - 1 - k
        shape[dim] += pad[2 * k] + pad[2 * k + 1]
        if shape[dim] < 0:
            raise RuntimeError(
                f"[pad] crops dimension {dim} of {tuple(input.shape)} below 0 with {tuple(pad)}"
            )
    fill = 0.0 if value is None else value
    out = flow.full(shape, fill, dtype=input.dtype, device=input.device)
    # the empty input's (empty) gradient flows through a sum of nothing, which adds 0
    return out + input.sum() if input.requires_grad else out


def _pads_an_empty_dim(input, pad):
    """What the constant-pad kernel refuses: growing a dimension of size 0."""
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        return False
    return any(
        input.shape[input.ndim - 1 - k] == 0 and pad[2 * k] + pad[2 * k + 1] > 0
        for k in range(len(pad) // 2)
    )


def pad(input, pad, mode="constant", value=None):
    """PyTorch's F.pad: `pad` gives (before, after) amounts from the last dimension backwards;
    negative amounts crop. Modes: constant, reflect, replicate, circular."""
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"[pad] unknown padding mode {mode!r}; use one of {_PAD_MODES}")
    try:
        pad = [operator.index(p) for p in pad]
    except TypeError:
        raise TypeError(f"[pad] padding amounts must be ints, got {tuple(pad)}") from None
    if mode == "constant" or len(pad) % 2 or len(pad) // 2 > input.ndim:
        if _pads_an_empty_dim(input, pad):
            return _pad_empty(input, pad, value)
        return flow._C.pad(input, pad, "constant", value)  # its checks name the bad amounts
    _check_non_constant(input, pad, mode, value)
    out = input
    for k in range(len(pad) // 2):
        out = _pad_dim(out, input.ndim - 1 - k, pad[2 * k], pad[2 * k + 1], mode)
    return out
