"""torch.stft and torch.istft as composites: frames gathered by index_select, windowed, and
transformed by flow.fft; the inverse overlap-adds the windowed frames (index_add) and divides by
the overlap-added squared window. Gradients flow to the signal and the window."""

from . import _C
from . import fft as _fft
from . import nn as _nn
from ._creation import tensor as _tensor

__all__ = ["stft", "istft"]


def _window(window, n_fft, win_length, dtype, device, fn):
    """The window padded on both sides to n_fft (ones of win_length when none is given)."""
    if win_length is None:
        win_length = n_fft if window is None else window.shape[0]
    if not 0 < win_length <= n_fft:
        raise RuntimeError(
            f"{fn}: expected 0 < win_length <= n_fft, but got win_length={win_length}"
        )
    if window is None:
        window = _C.ones(win_length, dtype=dtype, device=device)
    if window.dim() != 1 or window.shape[0] != win_length:
        raise RuntimeError(
            f"{fn}: expected a 1D window tensor of size equal to win_length={win_length}, but got "
            f"window with size {list(window.shape)}"
        )
    left = (n_fft - win_length) // 2
    if win_length < n_fft:
        window = _nn.functional.pad(window, [left, n_fft - win_length - left])
    return window


def _frame_index(n_frames, n_fft, hop, device):
    starts = [f * hop for f in range(n_frames)]
    return _tensor(
        [s + k for s in starts for k in range(n_fft)], dtype=_C.dtype.int64, device=device
    )


def _overlap_add(frames, hop, length):
    """The sum of the (B, T, n) frames laid hop apart, trimmed to length: each frame cut into
    blocks of hop (zero-padded), block j of frame t landing on block t + j."""
    batch, count, n = frames.shape
    r = -(-n // hop)
    if r * hop != n:
        frames = _nn.functional.pad(frames, [0, r * hop - n])
    blocks = frames.reshape(batch, count, r, hop)
    total = None
    for j in range(r):
        part = _nn.functional.pad(blocks.select(2, j), [0, 0, j, r - 1 - j])
        total = part if total is None else total + part
    return total.reshape(batch, (count + r - 1) * hop).narrow(1, 0, length)


def stft(
    input,
    n_fft,
    hop_length=None,
    win_length=None,
    window=None,
    center=True,
    pad_mode="reflect",
    normalized=False,
    onesided=None,
    return_complex=None,
    align_to_window=None,
):
    """The short-time Fourier transform (torch.stft): (B?, N, T) complex, or (B?, N, T, 2) real
    with return_complex=False."""
    complex_in = _fft._is_complex(input) or (window is not None and _fft._is_complex(window))
    if return_complex is None:
        if not complex_in:
            raise RuntimeError(
                "stft requires the return_complex parameter be given for real inputs, and will "
                "further require that return_complex=True in a future PyTorch release."
            )
        return_complex = True
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if input.dim() not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.dim()}D")
    hop = n_fft // 4 if hop_length is None else hop_length
    if hop <= 0:
        raise RuntimeError(f"stft: expected hop_length > 0, but got hop_length={hop}")
    x = input if input.dim() == 2 else input.unsqueeze(0)
    if center:
        pad = n_fft // 2
        if _fft._is_complex(x):
            pairs = _C.view_as_real(x).transpose(1, 2)
            pairs = _nn.functional.pad(pairs, [pad, pad], mode=pad_mode)
            x = _C.view_as_complex(pairs.transpose(1, 2).contiguous())
        else:
            x = _nn.functional.pad(x.unsqueeze(1), [pad, pad], mode=pad_mode).squeeze(1)
    length = x.shape[-1]
    if not 0 < n_fft <= length:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {length}, but got n_fft={n_fft}")
    n_frames = 1 + (length - n_fft) // hop
    offset = 0
    if align_to_window and win_length is not None and win_length < n_fft:
        offset = (n_fft - win_length) // 2
    index = _frame_index(n_frames, n_fft, hop, x.device)
    if offset:
        index = index + offset
    if _fft._is_complex(x):
        pairs = _C.index_select(_C.view_as_real(x), 1, index)
        frames = _C.view_as_complex(pairs.reshape(x.shape[0], n_frames, n_fft, 2).contiguous())
    else:
        frames = _C.index_select(x, 1, index).reshape(x.shape[0], n_frames, n_fft)
    real_dtype = _C.dtype.float64 if x.dtype in (_C.dtype.float64, _C.dtype.complex128) else None
    w = _window(window, n_fft, win_length, real_dtype or _C.dtype.float32, x.device, "stft")
    frames = frames * w
    if onesided is None:
        onesided = not complex_in
    if onesided and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    spec = _fft.rfft(frames, dim=-1, norm=norm) if onesided else _fft.fft(frames, dim=-1, norm=norm)
    spec = spec.transpose(1, 2)
    if input.dim() == 1:
        spec = spec.squeeze(0)
    if not return_complex:
        return _C.view_as_real(spec.contiguous())
    return spec


def istft(
    input,
    n_fft,
    hop_length=None,
    win_length=None,
    window=None,
    center=True,
    normalized=False,
    onesided=None,
    length=None,
    return_complex=False,
):
    """The inverse short-time Fourier transform (torch.istft) of a complex (B?, N, T) spectrum:
    the least-squares signal from the overlap-added windowed frames."""
    if not _fft._is_complex(input):
        raise RuntimeError(
            "istft requires a complex-valued input tensor matching the output from stft with "
            "return_complex=True."
        )
    if input.dim() not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions, got {input.dim()}")
    hop = n_fft // 4 if hop_length is None else hop_length
    if hop <= 0:
        raise RuntimeError(f"istft: expected hop_length > 0, but got hop_length={hop}")
    spec = input if input.dim() == 3 else input.unsqueeze(0)
    n_freq, n_frames = spec.shape[1], spec.shape[2]
    if onesided is None:
        onesided = n_freq != n_fft
    if onesided:
        if n_fft // 2 + 1 != n_freq:
            raise RuntimeError(
                f"istft: expected the frequency dimension (2nd from last) of the input tensor to "
                f"be equal to n_fft / 2 + 1 when onesided=True, but got {n_freq}"
            )
        if return_complex:
            raise RuntimeError("cannot have onesided output if window or input is complex")
    elif n_freq != n_fft:
        raise RuntimeError(
            f"istft: expected the frequency dimension (2nd from last) of the input tensor to be "
            f"equal to n_fft when onesided=False, but got {n_freq}"
        )
    real_dtype = _C.dtype.float64 if spec.dtype == _C.dtype.complex128 else _C.dtype.float32
    w = _window(window, n_fft, win_length, real_dtype, spec.device, "istft")
    norm = "ortho" if normalized else "backward"
    spec = spec.transpose(1, 2)  # (B, T, N)
    if return_complex:
        frames = _fft.ifft(spec, n=n_fft, dim=-1, norm=norm)
    else:  # a two-sided spectrum is taken as Hermitian: its first half, as torch does
        half = spec if onesided else spec.narrow(-1, 0, n_fft // 2 + 1)
        frames = _fft.irfft(half, n=n_fft, dim=-1, norm=norm)
    frames = frames * w
    expected = n_fft + hop * (n_frames - 1)
    if _fft._is_complex(frames):
        y = _C.complex(
            _overlap_add(_C.real(frames), hop, expected),
            _overlap_add(_C.imag(frames), hop, expected),
        )
    else:
        y = _overlap_add(frames, hop, expected)
    squares = (w * w).reshape(1, 1, n_fft).expand(1, n_frames, n_fft)
    envelope = _overlap_add(squares, hop, expected).reshape(expected)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    elif center:
        end = expected - n_fft // 2
    else:
        end = expected
    stop = min(end, expected)
    y = y.narrow(1, start, max(stop - start, 0))
    envelope = envelope.narrow(0, start, max(stop - start, 0))
    if envelope.numel() and float(envelope.abs().min()) < 1e-11:
        raise RuntimeError(
            "istft(...): window overlap add min: "
            f"{float(envelope.abs().min()):.3g} is below 1e-11"
        )
    y = y / envelope
    if end > expected:
        y = _fft._resize(y, 1, end - start)
    if input.dim() == 2:
        y = y.squeeze(0)
    return y
