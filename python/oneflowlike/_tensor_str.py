"""How a tensor prints (Tensor.__repr__ and __str__), as torch/_tensor_str.py: numpy's layout
with PyTorch's float formatting, its dtype, device, layout and gradient function."""

import builtins

import numpy as np

from . import _C


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
