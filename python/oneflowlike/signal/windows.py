"""flow.signal.windows: torch.signal.windows's window functions, and the torch-level
hann_window, hamming_window, blackman_window, bartlett_window and kaiser_window. Each is built
from creation and elementwise ops of the registry, on the requested device."""

import math
from collections.abc import Iterable

from .. import _C

__all__ = [
    "bartlett",
    "blackman",
    "cosine",
    "exponential",
    "gaussian",
    "general_cosine",
    "general_hamming",
    "hamming",
    "hann",
    "kaiser",
    "nuttall",
]

_float32, _float64 = _C.dtype.float32, _C.dtype.float64


def _checks(fn, M, dtype, layout):
    if M < 0:
        raise ValueError(f"{fn} requires non-negative window length, got M={M}")
    if layout is not None and str(layout).rsplit(".", 1)[-1] != "strided":
        raise ValueError(f"{fn} is implemented for strided tensors only, got: {layout}")
    if dtype not in (_float32, _float64):
        raise ValueError(f"{fn} expects float32 or float64 dtypes, got: {dtype}")


def _finish(w, requires_grad):
    return w.requires_grad_(True) if requires_grad else w


def _trivial(M, dtype, device, requires_grad):
    """The window of length 0 or 1 (empty, or [1.])."""
    return _finish(_C.ones([M], dtype=dtype, device=device), requires_grad)


def _linspace(start, step, M, dtype, device):
    return _C.linspace(start, start + (M - 1) * step, M, dtype=dtype, device=device)


def exponential(
    M,
    *,
    center=None,
    tau=1.0,
    sym=True,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
):
    """torch.signal.windows.exponential: exp(-|n - center| / tau)."""
    dtype = _float32 if dtype is None else dtype
    _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _trivial(0, dtype, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    k = _linspace(-center / tau, 1.0 / tau, M, dtype, device)
    return _finish(_C.exp(-k.abs()), requires_grad)


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """torch.signal.windows.cosine: sin(pi (n + 0.5) / M)."""
    dtype = _float32 if dtype is None else dtype
    _checks("cosine", M, dtype, layout)
    if M == 0:
        return _trivial(0, dtype, device, requires_grad)
    constant = math.pi / (M + 1 if not sym and M > 1 else M)
    k = _linspace(0.5 * constant, constant, M, dtype, device)
    return _finish(_C.sin(k), requires_grad)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """torch.signal.windows.gaussian: exp(-(n - (M - 1) / 2)^2 / (2 std^2))."""
    dtype = _float32 if dtype is None else dtype
    _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _trivial(0, dtype, device, requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / (std * math.sqrt(2))
    k = _linspace(start * constant, constant, M, dtype, device)
    return _finish(_C.exp(-(k * k)), requires_grad)


def _kaiser(M, beta, sym, dtype, device):
    b = _C.full([], float(beta), dtype=dtype, device=device)
    step = 2.0 * beta / (M if not sym else M - 1)
    k = _C.linspace(-beta, min(beta, -beta + (M - 1) * step), M, dtype=dtype, device=device)
    return _C.i0(_C.sqrt(_C.clamp(b * b - k * k, 0.0))) / _C.i0(b)


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """torch.signal.windows.kaiser: I0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta)."""
    dtype = _float32 if dtype is None else dtype
    _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M <= 1:
        return _trivial(M, dtype, device, requires_grad)
    return _finish(_kaiser(M, beta, sym, dtype, device), requires_grad)


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """torch.signal.windows.general_cosine: sum_i (-1)^i a_i cos(2 pi i n / (M - 1))."""
    dtype = _float32 if dtype is None else dtype
    _checks("general_cosine", M, dtype, layout)
    if M <= 1:
        return _trivial(M, dtype, device, requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    a = list(a)
    if not a:
        raise ValueError("Coefficients cannot be empty")
    k = _linspace(0.0, 2 * math.pi / (M if not sym else M - 1), M, dtype, device)
    w = None
    for i, coeff in enumerate(a):
        term = _C.cos(k * float(i)) * float((-1) ** i * coeff)
        w = term if w is None else w + term
    return _finish(w, requires_grad)


def general_hamming(
    M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None, requires_grad=False
):
    """torch.signal.windows.general_hamming: alpha - (1 - alpha) cos(2 pi n / (M - 1))."""
    return general_cosine(
        M,
        a=[alpha, 1.0 - alpha],
        sym=sym,
        dtype=dtype,
        layout=layout,
        device=device,
        requires_grad=requires_grad,
    )


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """torch.signal.windows.hamming: general_hamming with alpha = 0.54."""
    return general_hamming(
        M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad
    )


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """torch.signal.windows.hann: general_hamming with alpha = 0.5."""
    return general_hamming(
        M,
        alpha=0.5,
        sym=sym,
        dtype=dtype,
        layout=layout,
        device=device,
        requires_grad=requires_grad,
    )


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """torch.signal.windows.blackman: general_cosine with a = [0.42, 0.5, 0.08]."""
    dtype = _float32 if dtype is None else dtype
    _checks("blackman", M, dtype, layout)
    return general_cosine(
        M,
        a=[0.42, 0.5, 0.08],
        sym=sym,
        dtype=dtype,
        layout=layout,
        device=device,
        requires_grad=requires_grad,
    )


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """torch.signal.windows.nuttall: the minimum 4-term Blackman-Harris window."""
    return general_cosine(
        M,
        a=[0.3635819, 0.4891775, 0.1365995, 0.0106411],
        sym=sym,
        dtype=dtype,
        layout=layout,
        device=device,
        requires_grad=requires_grad,
    )


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """torch.signal.windows.bartlett: the triangular window 1 - |2n / (M - 1) - 1|."""
    dtype = _float32 if dtype is None else dtype
    _checks("bartlett", M, dtype, layout)
    if M <= 1:
        return _trivial(M, dtype, device, requires_grad)
    k = _linspace(-1.0, 2.0 / (M if not sym else M - 1), M, dtype, device)
    return _finish(1 - k.abs(), requires_grad)


# torch-level windows: a periodic window of length N is the symmetric one of length N + 1
# without its last point, as torch's native kernels compute it.


def _torch_window(fn, window_length, periodic, dtype, layout, device, requires_grad, make):
    dtype = _float32 if dtype is None else dtype
    if window_length < 0:
        raise RuntimeError(
            f"{fn} requires non-negative window_length, got window_length={window_length}"
        )
    if not dtype.is_floating_point:
        raise RuntimeError(f"{fn} expects floating point dtypes, got: {dtype}")
    if layout is not None and str(layout).rsplit(".", 1)[-1] != "strided":
        raise RuntimeError(f"{fn} is implemented for strided tensors only, got: {layout}")
    if window_length <= 1:
        return _trivial(window_length, dtype, device, requires_grad)
    n = window_length + 1 if periodic else window_length
    work = dtype if dtype in (_float32, _float64) else _float32
    w = make(_C.arange(n, dtype=work, device=device), n, work)
    if periodic:
        w = w[:window_length]
    return _finish(w.to(dtype).contiguous(), requires_grad)


def hamming_window(
    window_length,
    periodic=True,
    alpha=0.54,
    beta=0.46,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=False,
    requires_grad=False,
):
    """torch.hamming_window: alpha - beta cos(2 pi n / (N - 1))."""

    def make(n, length, _):
        return alpha - _C.cos(n * (2 * math.pi / (length - 1))) * beta

    return _torch_window(
        "hamming_window", window_length, periodic, dtype, layout, device, requires_grad, make
    )


def hann_window(
    window_length,
    periodic=True,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=False,
    requires_grad=False,
):
    """torch.hann_window: 0.5 - 0.5 cos(2 pi n / (N - 1))."""
    if window_length < 0:
        raise RuntimeError(
            f"hann_window requires non-negative window_length, got window_length={window_length}"
        )
    return hamming_window(
        window_length,
        periodic,
        0.5,
        0.5,
        dtype=dtype,
        layout=layout,
        device=device,
        requires_grad=requires_grad,
    )


def blackman_window(
    window_length,
    periodic=True,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=False,
    requires_grad=False,
):
    """torch.blackman_window: 0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""

    def make(n, length, _):
        x = n * (math.pi / (length - 1))
        return _C.cos(x * 4) * 0.08 - _C.cos(x * 2) * 0.5 + 0.42

    return _torch_window(
        "blackman_window", window_length, periodic, dtype, layout, device, requires_grad, make
    )


def bartlett_window(
    window_length,
    periodic=True,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=False,
    requires_grad=False,
):
    """torch.bartlett_window: 1 - |2n / (N - 1) - 1|, the rising half mirrored."""

    def make(n, length, _):
        x = n * (2.0 / (length - 1))
        half = ((length - 1) >> 1) + 1
        return _C.cat([x[:half], 2 - x[half:]], 0)

    return _torch_window(
        "bartlett_window", window_length, periodic, dtype, layout, device, requires_grad, make
    )


def kaiser_window(
    window_length,
    periodic=True,
    beta=12.0,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=False,
    requires_grad=False,
):
    """torch.kaiser_window: I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta), a = (N - 1) / 2."""

    def make(n, length, work):
        a = (length - 1) / 2.0
        r = (n - a) / a
        b = _C.full([], float(beta), dtype=work, device=device)
        return _C.i0(b * _C.sqrt(_C.clamp(1 - r * r, 0.0))) / _C.i0(b)

    return _torch_window(
        "kaiser_window", window_length, periodic, dtype, layout, device, requires_grad, make
    )


# The torch-level names flow/__init__.py imports; a registry op of the same name wins.
hann_window = getattr(_C, "hann_window", hann_window)
hamming_window = getattr(_C, "hamming_window", hamming_window)
blackman_window = getattr(_C, "blackman_window", blackman_window)
bartlett_window = getattr(_C, "bartlett_window", bartlett_window)
kaiser_window = getattr(_C, "kaiser_window", kaiser_window)
