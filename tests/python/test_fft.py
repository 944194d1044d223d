"""torch.fft, torch.stft and torch.istft against PyTorch (float64, float32 spot checks), gradients
of real-input transforms, a long prime length against numpy, and bad arguments."""

import numpy as np
import pytest
import torch

import oneflowlike as flow

torch.set_num_threads(1)
pytestmark = pytest.mark.unit

RNG = np.random.default_rng(0)
NORMS = [None, "ortho", "forward"]


def _signal(shape, complex_=False):
    x = RNG.standard_normal(shape)
    if complex_:
        x = x + 1j * RNG.standard_normal(shape)
    return x


def _check(ours, theirs, tol=1e-10):
    got = ours.numpy() if isinstance(ours, flow.Tensor) else ours
    want = theirs.detach().resolve_conj().resolve_neg().numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _both(name, x, **kw):
    ours = getattr(flow.fft, name)(flow.tensor(x), **kw)
    theirs = getattr(torch.fft, name)(torch.tensor(x), **kw)
    return ours, theirs


@pytest.mark.parametrize("n", [1, 2, 7, 8, 12, 13, 30, 97, 128, 1000])
@pytest.mark.parametrize("name", ["fft", "ifft"])
def test_c2c_one_dim_lengths(name, n):
    for complex_ in (False, True):
        _check(*_both(name, _signal((3, n), complex_)))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "ihfft", "irfft", "hfft"])
def test_one_dim_norms_sizes_and_dims(name, norm):
    complex_ = name in ("fft", "ifft", "irfft", "hfft")
    x = _signal((4, 6, 5), complex_)
    for kw in ({}, {"n": 9, "dim": 1}, {"n": 3, "dim": 0}, {"n": 8, "dim": -2}, {"dim": -3}):
        _check(*_both(name, x, norm=norm, **kw))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize(
    "name", ["fft2", "ifft2", "fftn", "ifftn", "rfft2", "rfftn", "irfft2", "irfftn"]
)
def test_multi_dim(name, norm):
    complex_ = not name.startswith("rfft")
    x = _signal((3, 4, 5), complex_)
    cases = [{}, {"s": (6, 3)}, {"dim": (0, 2)}, {"s": (2, 7), "dim": (2, 0)}, {"dim": (-1,)}]
    if name.endswith("n"):
        cases += [{"s": (4, 6, 3)}, {"dim": 1}]
    for kw in cases:
        _check(*_both(name, x, norm=norm, **kw))


@pytest.mark.parametrize("name", ["hfft2", "hfftn", "ihfft2", "ihfftn"])
def test_hermitian_multi_dim(name):
    x = _signal((3, 4, 5), name.startswith("hfft"))
    for norm in NORMS:
        for kw in ({}, {"s": (6, 4)}, {"dim": (0, 2)}, {"s": (3, 7), "dim": (2, 0)}):
            _check(*_both(name, x, norm=norm, **kw))


def test_float32_and_integer_inputs():
    x = _signal((2, 30)).astype(np.float32)
    for name in ("fft", "rfft", "ihfft", "fft2", "rfftn"):
        ours, theirs = _both(name, x)
        assert ours.dtype == flow.complex64
        _check(ours, theirs, 1e-4)
    z = _signal((2, 13), True).astype(np.complex64)
    for name in ("ifft", "irfft", "hfft", "ifftn"):
        _check(*_both(name, z), 1e-4)
    ints = np.arange(12).reshape(3, 4)
    _check(*_both("fft", ints), 1e-5)


def test_long_prime_against_numpy():
    n = 10007
    x = _signal(n, True)
    got = flow.fft.fft(flow.tensor(x)).numpy()
    want = np.fft.fft(x)
    assert np.abs(got - want).max() / np.abs(want).max() < 1e-12
    back = flow.fft.ifft(flow.tensor(got)).numpy()
    assert np.abs(back - x).max() < 1e-12


def _grad_pair(name, x, weights, **kw):
    """d(sum(w * out)) / dx for ours and torch's (real out as it is; complex as real pairs)."""
    t = torch.tensor(x, requires_grad=True)
    o = flow.tensor(x, requires_grad=True)
    tout = getattr(torch.fft, name)(t, **kw)
    oout = getattr(flow.fft, name)(o, **kw)
    if tout.is_complex():
        tout, oout = torch.view_as_real(tout.resolve_conj()), flow.view_as_real(oout)
    w = weights(tuple(tout.shape))
    (tout * torch.tensor(w)).sum().backward()
    (oout * flow.tensor(w)).sum().backward()
    return o.grad, t.grad


@pytest.mark.parametrize(
    "name,kw",
    [
        ("fft", {"n": 9, "norm": "ortho"}),
        ("ifft", {"dim": 0}),
        ("rfft", {"n": 7}),
        ("rfft", {"n": 10, "dim": 0, "norm": "forward"}),
        ("irfft", {}),
        ("irfft", {"n": 9, "norm": "ortho"}),
        ("hfft", {"n": 8}),
        ("ihfft", {"dim": 0}),
        ("rfft2", {}),
        ("irfftn", {"s": (5, 7)}),
        ("hfftn", {"norm": "ortho"}),
        ("ihfft2", {"s": (3, 6)}),
        ("fftn", {"s": (4, 4)}),
    ],
)
def test_gradients_of_real_inputs(name, kw):
    x = _signal((4, 6))
    ours, theirs = _grad_pair(name, x, lambda s: RNG.standard_normal(s), **kw)
    _check(ours, theirs, 1e-9)


def test_gradient_of_complex_input_through_real_pairs():
    # a complex leaf made from real pairs: the gradient reaches the pairs through view_as_complex
    x = _signal((3, 5, 2))
    t = torch.tensor(x, requires_grad=True)
    o = flow.tensor(x, requires_grad=True)
    w = RNG.standard_normal((3, 8))
    (torch.fft.irfft(torch.view_as_complex(t), n=8) * torch.tensor(w)).sum().backward()
    (flow.fft.irfft(flow.view_as_complex(o), n=8) * flow.tensor(w)).sum().backward()
    _check(o.grad, t.grad, 1e-9)


def test_shifts_and_frequencies():
    x = _signal((5, 6, 3))
    for name in ("fftshift", "ifftshift"):
        for kw in ({}, {"dim": 0}, {"dim": (0, 2)}, {"dim": -1}):
            _check(*_both(name, x, **kw))
    z = _signal((5, 4), True)
    _check(*_both("fftshift", z, dim=1))
    for n in (1, 6, 7):
        _check(flow.fft.fftfreq(n, 0.5), torch.fft.fftfreq(n, 0.5), 1e-7)
        _check(flow.fft.rfftfreq(n), torch.fft.rfftfreq(n), 1e-7)
    assert flow.fft.fftfreq(4, dtype=flow.float64).dtype == flow.float64


def _stft_both(x, **kw):
    ours = flow.stft(
        flow.tensor(x), **{k: flow.tensor(v) if k == "window" else v for k, v in kw.items()}
    )
    theirs = torch.stft(
        torch.tensor(x), **{k: torch.tensor(v) if k == "window" else v for k, v in kw.items()}
    )
    return ours, theirs


@pytest.mark.parametrize(
    "shape,kw",
    [
        ((100,), {"n_fft": 10, "return_complex": True}),
        ((100,), {"n_fft": 10, "return_complex": False}),
        ((10,), {"n_fft": 7, "center": False, "return_complex": True}),
        ((3, 100), {"n_fft": 16, "hop_length": 4, "return_complex": True}),
        ((2, 50), {"n_fft": 16, "win_length": 12, "return_complex": True, "normalized": True}),
        ((2, 50), {"n_fft": 16, "onesided": False, "return_complex": True}),
        ((2, 50), {"n_fft": 8, "pad_mode": "constant", "return_complex": True}),
    ],
)
def test_stft(shape, kw):
    x = _signal(shape)
    if "win_length" in kw:
        kw = dict(kw, window=np.hanning(kw["win_length"]))
    _check(*_stft_both(x, **kw))


def test_stft_gradient_to_signal_and_window():
    x, win = _signal((2, 40)), RNG.uniform(0.5, 2.0, 16)
    t, tw = torch.tensor(x, requires_grad=True), torch.tensor(win, requires_grad=True)
    o, ow = flow.tensor(x, requires_grad=True), flow.tensor(win, requires_grad=True)
    w = RNG.standard_normal((2, 9, 11, 2))
    tout = torch.view_as_real(torch.stft(t, 16, 4, window=tw, return_complex=True))
    oout = flow.view_as_real(flow.stft(o, 16, 4, window=ow, return_complex=True))
    (tout * torch.tensor(w)).sum().backward()
    (oout * flow.tensor(w)).sum().backward()
    _check(o.grad, t.grad, 1e-9)
    _check(ow.grad, tw.grad, 1e-9)


@pytest.mark.parametrize(
    "shape,kw",
    [
        ((6, 10), {"n_fft": 10}),
        ((6, 4), {"n_fft": 6, "onesided": False}),
        ((3, 6, 10), {"n_fft": 10, "center": False}),
        ((1, 9, 10), {"n_fft": 16, "hop_length": 4}),
        ((2, 6, 10), {"n_fft": 10, "length": 30}),
        ((2, 6, 10), {"n_fft": 10, "length": 60}),
        ((2, 6, 10), {"n_fft": 10, "normalized": True}),
    ],
)
def test_istft(shape, kw):
    spec = _signal(shape, True)
    _check(flow.istft(flow.tensor(spec), **kw), torch.istft(torch.tensor(spec), **kw), 1e-9)


def test_istft_with_window_and_gradient():
    spec = _signal((2, 6, 10), True)
    win = RNG.uniform(0.5, 2.0, 8)
    t = torch.tensor(spec.view(np.float64).reshape(2, 6, 10, 2), requires_grad=True)
    o = flow.tensor(spec.view(np.float64).reshape(2, 6, 10, 2), requires_grad=True)
    tw, ow = torch.tensor(win, requires_grad=True), flow.tensor(win, requires_grad=True)
    ty = torch.istft(torch.view_as_complex(t), 10, window=tw, win_length=8)
    oy = flow.istft(flow.view_as_complex(o), 10, window=ow, win_length=8)
    _check(oy, ty, 1e-9)
    w = RNG.standard_normal(tuple(ty.shape))
    (ty * torch.tensor(w)).sum().backward()
    (oy * flow.tensor(w)).sum().backward()
    _check(o.grad, t.grad, 1e-9)
    _check(ow.grad, tw.grad, 1e-9)


def test_stft_istft_round_trip():
    x = _signal((2, 64))
    win = np.hanning(16 + 1)[:-1]
    spec = flow.stft(flow.tensor(x), 16, 4, window=flow.tensor(win), return_complex=True)
    back = flow.istft(spec, 16, 4, window=flow.tensor(win), length=64)
    np.testing.assert_allclose(back.numpy(), x, atol=1e-10)


def test_bad_arguments_raise_clearly():
    x = flow.tensor(_signal((4, 5)))
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\)"):
        flow.fft.fft(x, n=0)
    with pytest.raises(RuntimeError, match="Invalid number of data points"):
        flow.fft.irfft(flow.tensor(_signal(1)))
    with pytest.raises(IndexError, match="Dimension out of range"):
        flow.fft.fft(x, dim=2)
    with pytest.raises(IndexError, match="no dimensions"):
        flow.fft.fft(flow.tensor(1.0))
    with pytest.raises(RuntimeError, match="Invalid normalization mode"):
        flow.fft.fft(x, norm="bad")
    with pytest.raises(TypeError, match="rfft expects a real input tensor"):
        flow.fft.rfft(flow.fft.fft(x))
    with pytest.raises(RuntimeError, match="same length"):
        flow.fft.fftn(x, s=(3,), dim=(0, 1))
    with pytest.raises(RuntimeError, match="unique"):
        flow.fft.fftn(x, dim=(0, 0))
    with pytest.raises(RuntimeError, match="return_complex"):
        flow.stft(flow.tensor(_signal(50)), 8)
    with pytest.raises(TypeError, match="_fft_c2c"):
        flow._C._fft_c2c(x, 0, True, 1.0)  # the op takes complex tensors only


def test_meta_tensors_infer_shapes():
    x = flow.empty(4, 6, device="meta")
    assert tuple(flow.fft.rfft(x).shape) == (4, 4)
    assert tuple(flow.fft.irfft(x, n=9).shape) == (4, 9)
    assert tuple(flow.fft.fftn(x, s=(3, 8)).shape) == (3, 8)


def test_complex_stft_and_complex_istft():
    x = _signal((2, 40), True)
    for kw in ({"n_fft": 8}, {"n_fft": 8, "hop_length": 3, "center": False}):
        _check(*_stft_both(x, **kw))
    spec = _signal((2, 8, 9), True)
    kw = {"n_fft": 8, "return_complex": True, "onesided": False}
    _check(flow.istft(flow.tensor(spec), **kw), torch.istft(torch.tensor(spec), **kw), 1e-9)
    assert tuple(flow.tensor(_signal(100)).stft(10, return_complex=True).shape) == (6, 51)
