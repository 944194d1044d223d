"""torch.fft: discrete Fourier transforms as composites of one op, _fft_c2c (the transform of a
complex tensor along one dim, either direction, times a scale; its gradient is its adjoint).

Real inputs become complex with a zero imaginary part; one-sided outputs are narrowed; a
complex-to-real transform of a half spectrum X (length n // 2 + 1) is the real part of the full
transform of w * X zero-padded to n, with w 2 for the bins whose mirror image is missing and 1
for the DC and Nyquist bins. So every gradient is PyTorch's (fft_r2c_backward /
fft_c2r_backward) through autograd of the parts."""

import math

from . import _C
from . import nn as _nn
from ._creation import tensor as _tensor

__all__ = [
    "fft",
    "ifft",
    "fft2",
    "ifft2",
    "fftn",
    "ifftn",
    "rfft",
    "irfft",
    "rfft2",
    "irfft2",
    "rfftn",
    "irfftn",
    "hfft",
    "ihfft",
    "hfft2",
    "ihfft2",
    "hfftn",
    "ihfftn",
    "fftfreq",
    "rfftfreq",
    "fftshift",
    "ifftshift",
]

_TORCH_NAMES = {
    "float32": "Float",
    "float64": "Double",
    "complex64": "ComplexFloat",
    "complex128": "ComplexDouble",
    "float16": "Half",
    "bfloat16": "BFloat16",
}


def _tname(dtype):
    name = str(dtype).rsplit(".", 1)[-1]
    return _TORCH_NAMES.get(name, name)


def _is_complex(t):
    return t.dtype in (_C.dtype.complex64, _C.dtype.complex128)


def _real_dtype(t):
    """The floating dtype a real input transforms in: integers and bool as float32 (torch's
    default dtype); 16-bit floats are refused, as torch does on the CPU."""
    if t.dtype in (_C.dtype.float32, _C.dtype.float64):
        return t.dtype
    if t.dtype in (_C.dtype.float16, _C.dtype.bfloat16):
        raise RuntimeError(f"fft: Unsupported dtype {_tname(t.dtype)}")
    return _C.dtype.float32


def _as_real(t):
    dtype = _real_dtype(t)
    return t if t.dtype == dtype else t.to(dtype)


def _as_complex(t):
    if _is_complex(t):
        return t
    real = _as_real(t)
    return real.to(_C.dtype.complex128 if real.dtype == _C.dtype.float64 else _C.dtype.complex64)


def _require_real(t, fn):
    if _is_complex(t):
        raise TypeError(f"{fn} expects a real input tensor, but got {_tname(t.dtype)}")


def _norm_scale(norm, n, forward):
    """torch's normalization: `forward` says which convention (fft-like or ifft-like) applies."""
    if norm is None or norm == "backward":
        return 1.0 if forward else 1.0 / n
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if norm == "forward":
        return 1.0 / n if forward else 1.0
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _dim(t, dim):
    nd = t.dim()
    if nd == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if not -nd <= dim < nd:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})"
        )
    return dim % nd


def _check_points(n):
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _pad_spec(nd, d, extra):
    """F.pad's list (last dim first) that appends `extra` zeros to dim d of an nd-dim tensor."""
    return [0, 0] * (nd - 1 - d) + [0, extra]


def _resize(t, d, n):
    """t trimmed or zero-padded at the end of dim d to length n (complex ones as float pairs)."""
    size = t.shape[d]
    if n == size:
        return t
    if n < size:
        return t.narrow(d, 0, n)
    if _is_complex(t):
        pairs = _C.view_as_real(t)
        padded = _nn.functional.pad(pairs, _pad_spec(pairs.dim(), d, n - size))
        return _C.view_as_complex(padded)
    return _nn.functional.pad(t, _pad_spec(t.dim(), d, n - size))


def _c2c(z, d, forward, scale):
    return _C._fft_c2c(z, d, forward, scale)


def _c2r(z, d, n, forward, scale):
    """The real transform of the Hermitian signal whose first n // 2 + 1 values along d are z (its
    length already n // 2 + 1): the bins whose mirror image is missing count twice (as slices
    and a cat of the float pairs, so that global tensors need no constant of their own)."""
    h = n // 2 + 1
    pairs = _C.view_as_real(z)
    twice = h - 1 - (1 if n % 2 == 0 else 0)  # bins 1 .. twice
    parts = [pairs.narrow(d, 0, 1)]
    if twice > 0:
        parts.append(pairs.narrow(d, 1, twice) * 2.0)
    if h - 1 - twice > 0:
        parts.append(pairs.narrow(d, 1 + twice, h - 1 - twice))
    weighted = _C.view_as_complex(_C.cat(parts, d) if len(parts) > 1 else parts[0].contiguous())
    return _C.real(_c2c(_resize(weighted, d, n), d, forward, scale)).contiguous()


# --- one dim -------------------------------------------------------------------------------


def _one_dim(input, n, dim):
    d = _dim(input, dim)
    if n is None:
        n = input.shape[d]
    _check_points(n)
    return d, n


def fft(input, n=None, dim=-1, norm=None):
    """The one-dimensional discrete Fourier transform (torch.fft.fft)."""
    d, n = _one_dim(input, n, dim)
    z = _resize(_as_complex(input), d, n)
    return _c2c(z, d, True, _norm_scale(norm, n, True))


def ifft(input, n=None, dim=-1, norm=None):
    """The one-dimensional inverse discrete Fourier transform (torch.fft.ifft)."""
    d, n = _one_dim(input, n, dim)
    z = _resize(_as_complex(input), d, n)
    return _c2c(z, d, False, _norm_scale(norm, n, False))


def rfft(input, n=None, dim=-1, norm=None):
    """The DFT of a real signal, its n // 2 + 1 non-negative frequencies (torch.fft.rfft)."""
    _require_real(input, "rfft")
    d, n = _one_dim(input, n, dim)
    z = _as_complex(_resize(_as_real(input), d, n))
    return _c2c(z, d, True, _norm_scale(norm, n, True)).narrow(d, 0, n // 2 + 1)


def irfft(input, n=None, dim=-1, norm=None):
    """The inverse of rfft: a real signal of length n (default 2 * (size - 1))."""
    d = _dim(input, dim)
    if n is None:
        n = 2 * (input.shape[d] - 1)
    _check_points(n)
    z = _resize(_as_complex(input), d, n // 2 + 1)
    return _c2r(z, d, n, False, _norm_scale(norm, n, False))


def hfft(input, n=None, dim=-1, norm=None):
    """The DFT of a Hermitian signal given by its first half: a real spectrum (torch.fft.hfft)."""
    d = _dim(input, dim)
    if n is None:
        n = 2 * (input.shape[d] - 1)
    _check_points(n)
    # c2r of conj(x), which as a real part is the forward transform of x itself
    z = _resize(_as_complex(input), d, n // 2 + 1)
    return _c2r(z, d, n, True, _norm_scale(norm, n, True))


def ihfft(input, n=None, dim=-1, norm=None):
    """The inverse of hfft: n // 2 + 1 values of the Hermitian spectrum of a real signal."""
    _require_real(input, "ihfft")
    d, n = _one_dim(input, n, dim)
    z = _as_complex(_resize(_as_real(input), d, n))
    # conj(rfft(x)) of a real x is its inverse-direction transform
    return _c2c(z, d, False, _norm_scale(norm, n, False)).narrow(d, 0, n // 2 + 1)


# --- several dims --------------------------------------------------------------------------


def _dims_and_sizes(input, s, dim, default_dim=None):
    """torch's canonicalisation of (s, dim): the dims (non-negative, unique) and their lengths
    (-1 in s keeps the input's)."""
    nd = input.dim()
    if dim is None and default_dim is not None and s is None:
        dim = default_dim
    if isinstance(dim, int):
        dim = (dim,)
    if isinstance(s, int):
        s = (s,)
    if dim is not None:
        dims = [_dim(input, d) for d in dim]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
        if s is not None and len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    elif s is not None:
        if len(s) > nd:
            raise RuntimeError(
                f"Got shape with {len(s)} values but input tensor only has {nd} dimensions."
            )
        dims = list(range(nd - len(s), nd))
    else:
        dims = list(range(nd))
    sizes = [input.shape[d] for d in dims] if s is None else list(s)
    for i, d in enumerate(dims):
        if sizes[i] == -1:
            sizes[i] = input.shape[d]
    return dims, sizes


def _c2c_nd(input, s, dim, norm, forward, default_dim=None):
    dims, sizes = _dims_and_sizes(input, s, dim, default_dim)
    z = _as_complex(input)
    for d, n in zip(dims, sizes):
        _check_points(n)
        z = _resize(z, d, n)
    for d, n in zip(dims, sizes):
        z = _c2c(z, d, forward, _norm_scale(norm, n, forward))
    return z


def fftn(input, s=None, dim=None, norm=None):
    """The n-dimensional DFT (torch.fft.fftn): one-dimensional transforms along each dim."""
    return _c2c_nd(input, s, dim, norm, True)


def ifftn(input, s=None, dim=None, norm=None):
    """The n-dimensional inverse DFT (torch.fft.ifftn)."""
    return _c2c_nd(input, s, dim, norm, False)


def fft2(input, s=None, dim=(-2, -1), norm=None):
    """The two-dimensional DFT (torch.fft.fft2)."""
    return _c2c_nd(input, s, dim, norm, True)


def ifft2(input, s=None, dim=(-2, -1), norm=None):
    """The two-dimensional inverse DFT (torch.fft.ifft2)."""
    return _c2c_nd(input, s, dim, norm, False)


def _r2c_nd(input, s, dim, norm, fn, forward):
    """rfftn (forward) and ihfftn (the inverse direction; conj(rfftn) of a real signal)."""
    _require_real(input, fn)
    dims, sizes = _dims_and_sizes(input, s, dim)
    if not dims:
        raise RuntimeError(f"{fn} must transform at least one axis")
    x = _as_real(input)
    for d, n in zip(dims, sizes):
        _check_points(n)
        x = _resize(x, d, n)
    last, n_last = dims[-1], sizes[-1]
    z = _c2c(_as_complex(x), last, forward, _norm_scale(norm, n_last, forward))
    z = z.narrow(last, 0, n_last // 2 + 1)
    for d, n in zip(dims[:-1], sizes[:-1]):
        z = _c2c(z, d, forward, _norm_scale(norm, n, forward))
    return z


def _c2r_nd(input, s, dim, norm, fn, forward):
    """irfftn (inverse) and hfftn (forward): the other dims first, then the half-spectrum dim."""
    dims, sizes = _dims_and_sizes(input, s, dim)
    if not dims:
        raise RuntimeError(f"{fn} must transform at least one axis")
    last = dims[-1]
    if s is None or (s[-1] if not isinstance(s, int) else s) == -1:
        sizes[-1] = 2 * (input.shape[last] - 1)
    z = _as_complex(input)
    for d, n in zip(dims[:-1], sizes[:-1]):
        _check_points(n)
        z = _resize(z, d, n)
    n_last = sizes[-1]
    _check_points(n_last)
    z = _resize(z, last, n_last // 2 + 1)
    # hfftn: c2r of conj(c2c forward(x)), whose real part is the forward c2r of c2c forward(x)
    for d, n in zip(dims[:-1], sizes[:-1]):
        z = _c2c(z, d, forward, _norm_scale(norm, n, forward))
    return _c2r(z, last, n_last, forward, _norm_scale(norm, n_last, forward))


def rfftn(input, s=None, dim=None, norm=None):
    """The n-dimensional DFT of a real signal, one-sided in the last dim (torch.fft.rfftn)."""
    return _r2c_nd(input, s, dim, norm, "rfftn", True)


def irfftn(input, s=None, dim=None, norm=None):
    """The inverse of rfftn (torch.fft.irfftn)."""
    return _c2r_nd(input, s, dim, norm, "irfftn", False)


def rfft2(input, s=None, dim=(-2, -1), norm=None):
    """The two-dimensional rfftn (torch.fft.rfft2)."""
    return _r2c_nd(input, s, dim, norm, "rfft2", True)


def irfft2(input, s=None, dim=(-2, -1), norm=None):
    """The two-dimensional irfftn (torch.fft.irfft2)."""
    return _c2r_nd(input, s, dim, norm, "irfft2", False)


def hfftn(input, s=None, dim=None, norm=None):
    """The n-dimensional DFT of a Hermitian signal given by its half (torch.fft.hfftn)."""
    return _c2r_nd(input, s, dim, norm, "hfftn", True)


def ihfftn(input, s=None, dim=None, norm=None):
    """The inverse of hfftn (torch.fft.ihfftn)."""
    return _r2c_nd(input, s, dim, norm, "ihfftn", False)


def hfft2(input, s=None, dim=(-2, -1), norm=None):
    """The two-dimensional hfftn (torch.fft.hfft2)."""
    return _c2r_nd(input, s, dim, norm, "hfft2", True)


def ihfft2(input, s=None, dim=(-2, -1), norm=None):
    """The two-dimensional ihfftn (torch.fft.ihfft2)."""
    return _r2c_nd(input, s, dim, norm, "ihfft2", False)


# --- frequencies and shifts ----------------------------------------------------------------


def _freq_tensor(values, n, d, dtype, device, requires_grad):
    out = _tensor(values, dtype=dtype or _C.dtype.float32, device=device)
    out = out / (d * n) if n else out
    if requires_grad:
        out.requires_grad_(True)
    return out


def fftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of an n-point DFT: [0, 1, ..., -(n // 2), ..., -1] / (d * n)."""
    values = [float(k) for k in range((n + 1) // 2)] + [float(k) for k in range(-(n // 2), 0)]
    return _freq_tensor(values, n, d, dtype, device, requires_grad)


def rfftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of rfft's output: [0, 1, ..., n // 2] / (d * n)."""
    values = [float(k) for k in range(n // 2 + 1)]
    return _freq_tensor(values, n, d, dtype, device, requires_grad)


def _shift(input, dim, inverse):
    if dim is None:
        dims = list(range(input.dim()))
    elif isinstance(dim, int):
        dims = [dim]
    else:
        dims = list(dim)
    dims = [_dim(input, d) for d in dims]
    shifts = [(input.shape[d] + 1) // 2 if inverse else input.shape[d] // 2 for d in dims]
    if not dims:
        return input.clone()
    if _is_complex(input):
        return _C.view_as_complex(_C.roll(_C.view_as_real(input), shifts, dims).contiguous())
    return _C.roll(input, shifts, dims)


def fftshift(input, dim=None):
    """Moves the zero frequency to the centre of each dim (torch.fft.fftshift)."""
    return _shift(input, dim, False)


def ifftshift(input, dim=None):
    """The inverse of fftshift (torch.fft.ifftshift)."""
    return _shift(input, dim, True)
