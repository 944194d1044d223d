"""complex64: the dtype, view_as_complex / view_as_real and the complex composites (polar,
complex, real, imag, conj, abs, add, sub, mul, div) against numpy and PyTorch, their gradients
(PyTorch's convention), layout ops on complex tensors, LLaMA's rotary embedding, and the clear
error every other op raises."""

import numpy as np
import pytest
import torch

import oneflowlike as flow

DEVICES = ["cpu"] + (["cuda"] if flow.cuda.is_available() else [])


def _f(*shape, seed=0):
    return np.random.default_rng([seed, *shape]).standard_normal(shape).astype(np.float32)


def _z(*shape, seed=0):
    return (_f(*shape, seed=seed) + 1j * _f(*shape, seed=seed + 100)).astype(np.complex64)


def _close(got, want, tol=1e-5):
    got = got.detach().cpu().numpy() if isinstance(got, flow.Tensor) else np.asarray(got)
    want = want.detach().numpy() if isinstance(want, torch.Tensor) else np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# --- the dtype ---


def test_complex64_is_an_eight_byte_dtype_named_as_in_pytorch():
    assert flow.cfloat == flow.complex64
    assert flow.complex64.itemsize == 8
    assert flow.complex64.name == "complex64"
    assert repr(flow.complex64) == "oneflowlike.complex64"
    assert not flow.complex64.is_floating_point


def test_complex_wins_type_promotion():
    for other in (flow.bool, flow.int64, flow.float16, flow.float32):
        assert flow.promote_types(flow.complex64, other) == flow.complex64
        assert flow.promote_types(other, flow.complex64) == flow.complex64
    for other in (flow.float64, flow.complex128, flow.float32):  # PyTorch's complex128 cases
        assert flow.promote_types(flow.complex128, other) == flow.complex128
    assert flow.promote_types(flow.complex64, flow.float64) == flow.complex128
    z, x = flow.tensor(_z(3)), flow.tensor(_f(3))
    assert flow.result_type(z, x) == flow.complex64
    assert flow.result_type(x, z) == flow.complex64
    assert flow.result_type(x, flow.tensor(1 + 2j)) == flow.complex64  # a 0-d complex wins too
    assert flow.result_type(x, 1j) == flow.complex64  # and a Python complex number


def test_numpy_round_trip_and_python_complex_numbers():
    z = _z(3, 4)
    t = flow.tensor(z)
    assert t.dtype == flow.complex64 and t.is_complex() and not t.is_floating_point()
    assert t.numpy().dtype == np.complex64
    np.testing.assert_array_equal(t.numpy(), z)
    np.testing.assert_array_equal(flow.from_numpy(z).numpy(), z)
    p = flow.tensor([1 + 2j, 3 - 4j])  # Python complex numbers default to complex64, as in PyTorch
    assert p.dtype == flow.complex64
    np.testing.assert_array_equal(p.numpy(), np.array([1 + 2j, 3 - 4j], np.complex64))
    assert t[1, 2].item() == complex(z[1, 2])
    assert t.tolist() == z.tolist()


def test_repr_prints_complex_values_as_pytorch_does():
    cases = [
        np.array([1 + 2j, 3 - 4j]),
        np.array([[0.5 + 1.25j, -1j], [2, 3.5 - 0.1j]]),
        np.array(1 + 2j),
        _z(3, 4),
        _z(2, 3, 4) * 1e5,
        np.array([np.inf + 1j, np.nan - 2j]),
        np.arange(30).reshape(5, 6) * (1 + 1j),
    ]
    for c in cases:
        c = np.asarray(c, dtype=np.complex64)
        assert repr(flow.tensor(c)) == repr(torch.tensor(c))
    z = flow.tensor(np.array([1 + 2j], np.complex64), device="meta")
    assert "dtype" not in repr(z)  # complex64 is the default complex dtype, as in PyTorch


# --- view_as_complex and view_as_real ---


def test_view_as_complex_views_the_pairs_of_the_last_dimension():
    a = _f(2, 3, 2)
    x = flow.tensor(a)
    z = flow.view_as_complex(x)
    assert z.dtype == flow.complex64 and tuple(z.shape) == (2, 3)
    _close(z, a[..., 0] + 1j * a[..., 1])
    _close(z, torch.view_as_complex(torch.tensor(a)))
    x[0, 1, 1] = 7.0  # the same memory
    assert z[0, 1].item() == complex(a[0, 1, 0], 7.0)


def test_view_as_real_is_the_inverse_view():
    c = _z(4, 3)
    z = flow.tensor(c)
    r = flow.view_as_real(z)
    assert r.dtype == flow.float32 and tuple(r.shape) == (4, 3, 2)
    _close(r, torch.view_as_real(torch.tensor(c)))
    r[2, 1, 0] = 5.0
    assert z[2, 1].item() == complex(5.0, c[2, 1].imag)  # one memory: the write shows in z
    c[2, 1] = complex(5.0, c[2, 1].imag)
    _close(flow.view_as_complex(flow.view_as_real(z)), c)


def test_view_as_complex_raises_pytorchs_errors():
    with pytest.raises(TypeError, match=r"\[view_as_complex\].*float32"):
        flow.view_as_complex(flow.zeros(3, 2, dtype=flow.float16))
    with pytest.raises(RuntimeError, match=r"\[view_as_complex\] Tensor must have a last dim"):
        flow.view_as_complex(flow.zeros(3, 3))
    with pytest.raises(RuntimeError, match=r"\[view_as_complex\] Input tensor must have one or"):
        flow.view_as_complex(flow.tensor(1.0))
    with pytest.raises(RuntimeError, match="last dimension with stride 1"):
        flow.view_as_complex(flow.zeros(2, 3).t())
    with pytest.raises(RuntimeError, match="stride divisible by 2 for all but last dimension"):
        flow.view_as_complex(flow.zeros(4, 3)[:, 1:3])
    with pytest.raises(RuntimeError, match="storage_offset divisible by 2"):
        flow.view_as_complex(flow.zeros(7)[1:3])
    with pytest.raises(TypeError, match=r"\[view_as_real\].*complex"):
        flow.view_as_real(flow.zeros(3, 2))


def test_view_as_complex_and_view_as_real_on_meta():
    z = flow.view_as_complex(flow.zeros(4, 5, 2, device="meta"))
    assert z.dtype == flow.complex64 and tuple(z.shape) == (4, 5) and z.device.type == "meta"
    r = flow.view_as_real(z)
    assert r.dtype == flow.float32 and tuple(r.shape) == (4, 5, 2)


def test_views_pass_gradients_to_each_other():
    a, w = _f(3, 4, 2), _f(3, 4, 2, seed=1)
    x = flow.tensor(a, requires_grad=True)
    (flow.view_as_real(flow.view_as_complex(x)) * flow.tensor(w)).sum().backward()
    _close(x.grad, w)


# --- the composites ---


def test_polar_and_complex_match_pytorch():
    m, t = np.abs(_f(3, 4)) + 0.1, _f(3, 4, seed=1)
    _close(
        flow.polar(flow.tensor(m), flow.tensor(t)), torch.polar(torch.tensor(m), torch.tensor(t))
    )
    re, im = _f(3, 1), _f(4, seed=2)  # broadcast
    _close(
        flow.complex(flow.tensor(re), flow.tensor(im)),
        torch.complex(torch.tensor(re), torch.tensor(im)),
    )
    with pytest.raises(TypeError, match=r"\[polar\].*float32"):
        flow.polar(flow.ones(3, dtype=flow.float64), flow.ones(3))
    with pytest.raises(TypeError, match=r"\[complex\].*float32"):
        flow.complex(flow.ones(3, dtype=flow.int64), flow.ones(3))


def test_real_and_imag_are_views():
    c = _z(3, 4)
    z = flow.tensor(c)
    _close(z.real, c.real)
    _close(z.imag, c.imag)
    _close(flow.real(z), c.real)
    z.imag[1, 2] = 9.0
    assert z[1, 2].item() == complex(c[1, 2].real, 9.0)
    x = flow.tensor(_f(3))
    assert flow.real(x) is x or np.array_equal(flow.real(x).numpy(), x.numpy())
    with pytest.raises(TypeError, match=r"\[imag\].*non-complex"):
        x.imag


def test_conj_and_abs_match_numpy():
    c = _z(3, 4)
    z = flow.tensor(c)
    _close(flow.conj(z), np.conj(c))
    _close(z.conj(), np.conj(c))
    _close(z.abs(), np.abs(c))
    _close(flow.abs(z), np.abs(c))
    _close(abs(z), np.abs(c))
    x = flow.tensor(_f(3))
    _close(flow.conj(x), _f(3))


BINARY = {
    "add": (lambda a, b: a + b, np.add),
    "sub": (lambda a, b: a - b, np.subtract),
    "mul": (lambda a, b: a * b, np.multiply),
    "div": (lambda a, b: a / b, np.divide),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_arithmetic_broadcasts_and_mixes_with_real_operands(name):
    op, ref = BINARY[name]
    a, b, r = _z(2, 1, 3), _z(4, 3, seed=1), _f(4, 3, seed=2)
    za, zb, zr = flow.tensor(a), flow.tensor(b), flow.tensor(r)
    _close(op(za, zb), ref(a, b), tol=1e-4)
    _close(getattr(flow, name)(za, zb), ref(a, b), tol=1e-4)
    _close(op(za, zr), ref(a, r).astype(np.complex64), tol=1e-4)
    _close(op(zr, za), ref(r, a).astype(np.complex64), tol=1e-4)
    _close(op(za, 2.5), ref(a, np.float32(2.5)), tol=1e-4)
    _close(op(2, za), ref(np.float32(2), a), tol=1e-4)
    _close(op(za, 0.5 - 2j), ref(a, np.complex64(0.5 - 2j)), tol=1e-4)
    _close(op(1j, zr), ref(np.complex64(1j), r), tol=1e-4)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_arithmetic_gradients_follow_pytorchs_convention(name):
    """Through view_as_complex and view_as_real: grad_a = grad_z * conj(b) for z = a * b."""
    op, _ = BINARY[name]
    xa, xb, w = _f(2, 1, 3, 2), _f(4, 3, 2, seed=1), _f(2, 4, 3, 2, seed=2)

    def run(lib, xa, xb):
        out = lib.view_as_real(op(lib.view_as_complex(xa), lib.view_as_complex(xb)))
        (out * lib.tensor(w)).sum().backward()
        return out

    fa, fb = flow.tensor(xa, requires_grad=True), flow.tensor(xb, requires_grad=True)
    ta, tb = torch.tensor(xa, requires_grad=True), torch.tensor(xb, requires_grad=True)
    _close(run(flow, fa, fb), run(torch, ta, tb), tol=1e-5)
    _close(fa.grad, ta.grad, tol=1e-4)
    _close(fb.grad, tb.grad, tol=1e-4)


def test_gradients_of_a_complex_tensor_used_twice_add_up():
    xa, w = _f(3, 2), _f(3, 2, seed=1)

    def run(lib, x):
        z = lib.view_as_complex(x)
        (lib.view_as_real(z * z + z) * lib.tensor(w)).sum().backward()

    f, t = flow.tensor(xa, requires_grad=True), torch.tensor(xa, requires_grad=True)
    run(flow, f)
    run(torch, t)
    _close(f.grad, t.grad, tol=1e-5)


# --- layout ops ---


def test_layout_ops_on_complex_tensors():
    c = _z(4, 6)
    z = flow.tensor(c)
    checks = {
        "reshape": (z.reshape(3, 8), c.reshape(3, 8)),
        "view": (z.view(6, 4), c.reshape(6, 4)),
        "slice": (z[1:3, ::2], c[1:3, ::2]),
        "index": (z[2], c[2]),
        "select": (z[:, -1], c[:, -1]),
        "none": (z[None, 1:2], c[None, 1:2]),
        "t": (z.t(), c.T),
        "permute": (z.permute(1, 0), c.transpose(1, 0)),
        "transpose then contiguous": (z.transpose(0, 1).contiguous(), c.T),
        "unsqueeze": (z.unsqueeze(1), c[:, None]),
        "flatten": (z.flatten(), c.ravel()),
        "expand": (z[:1].expand(3, 6), np.broadcast_to(c[:1], (3, 6))),
        "clone": (z.clone(), c),
        "detach": (z.detach(), c),
        "narrow": (z.narrow(1, 2, 3), c[:, 2:5]),
        "to": (z.to(flow.complex64), c),
    }
    for name, (got, want) in checks.items():
        assert got.dtype == flow.complex64, name
        np.testing.assert_array_equal(got.numpy(), want, err_msg=name)
    w = z.transpose(0, 1).reshape(-1)  # a copy: no view exists
    np.testing.assert_array_equal(w.numpy(), c.T.ravel())
    y = z.clone()
    y[1:3] = z[:2]
    np.testing.assert_array_equal(y.numpy()[1:3], c[:2])


def test_casts_into_and_out_of_complex64_as_pytorch():
    a = _f(3, 4)
    z = flow.tensor(a).to(flow.complex64)
    _close(z, torch.tensor(a).to(torch.complex64))
    c = _z(3, 4)
    _close(flow.tensor(c).to(flow.float32), c.real)  # PyTorch drops the imaginary part (and warns)
    _close(flow.tensor(c).to(flow.float64), c.real.astype(np.float64))


def test_filled_complex_tensors():
    _close(flow.zeros(2, 3, dtype=flow.complex64), np.zeros((2, 3), np.complex64))
    _close(flow.ones(2, dtype=flow.complex64), np.ones(2, np.complex64))
    _close(flow.ones_like(flow.tensor(_z(3))), np.ones(3, np.complex64))


@pytest.mark.skipif("cuda" not in DEVICES, reason="no CUDA device")
def test_complex_tensors_move_to_cuda_and_back():
    c = _z(5, 4)
    z = flow.tensor(c).to("cuda")
    assert z.dtype == flow.complex64 and z.device.type == "cuda"
    np.testing.assert_array_equal(z.cpu().numpy(), c)
    np.testing.assert_array_equal(z.t().contiguous().cpu().numpy(), c.T)
    np.testing.assert_allclose((z * z).cpu().numpy(), c * c, rtol=1e-5, atol=1e-5)


# --- LLaMA's rotary embedding (Meta's model.py) ---


def precompute_freqs_cis(lib, dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (lib.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = lib.arange(end, device=freqs.device)
    freqs = lib.outer(t, freqs).float()
    return lib.polar(lib.ones_like(freqs), freqs)  # complex64


def reshape_for_broadcast(freqs_cis, x):
    ndim = x.ndim
    assert 0 <= 1 < ndim
    assert tuple(freqs_cis.shape) == (x.shape[1], x.shape[-1])
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(lib, xq, xk, freqs_cis):
    xq_ = lib.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = lib.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = lib.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = lib.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


@pytest.mark.parametrize("device", DEVICES)
def test_llama_rotary_embedding_and_its_gradient_match_pytorch(device):
    bsz, seqlen, heads, head_dim, start = 2, 5, 3, 8, 3
    q, k = _f(bsz, seqlen, heads, head_dim), _f(bsz, seqlen, heads, head_dim, seed=1)
    wq, wk = _f(bsz, seqlen, heads, head_dim, seed=2), _f(bsz, seqlen, heads, head_dim, seed=3)

    def run(lib, dev):
        freqs_cis = precompute_freqs_cis(lib, head_dim, 16).to(dev)
        assert freqs_cis.dtype == (flow.complex64 if lib is flow else torch.complex64)
        freqs_cis = freqs_cis[start : start + seqlen]
        xq = lib.tensor(q, requires_grad=True, device=dev)
        xk = lib.tensor(k, requires_grad=True, device=dev)
        oq, ok = apply_rotary_emb(lib, xq, xk, freqs_cis)
        loss = (oq * lib.tensor(wq, device=dev)).sum() + (ok * lib.tensor(wk, device=dev)).sum()
        loss.backward()
        return freqs_cis, oq, ok, xq.grad, xk.grad

    got, want = run(flow, device), run(torch, "cpu")
    for g, w in zip(got, want):
        _close(g, w, tol=1e-5)


# --- every other op raises, naming itself and complex64 ---

UNSUPPORTED = {
    "exp": lambda z: z.exp(),
    "sin": lambda z: flow.sin(z),
    "neg": lambda z: -z,
    "sum": lambda z: z.sum(),
    "mean": lambda z: z.mean(),
    "matmul": lambda z: z @ z,
    "gt": lambda z: z > z,
    "eq": lambda z: z == z,
    "pow": lambda z: z.pow(flow.tensor(2.0)),
    "cat": lambda z: flow.cat([z, z]),
    "softmax": lambda z: z.softmax(0),
    "mul_": lambda z: z.mul_(z),
    "add_": lambda z: z.add_(z),
    "maximum": lambda z: flow.maximum(z, z),
    "where": lambda z: flow.where(flow.tensor([True, False, True]), z, z),
    "index_select": lambda z: z.index_select(0, flow.tensor([0, 2])),
    "sqrt": lambda z: z.sqrt(),
}


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_other_ops_raise_a_clear_error_naming_the_op_and_complex64(name):
    z = flow.tensor(_z(3))
    with pytest.raises((TypeError, RuntimeError), match=r"\[\w+\] .*complex64") as e:
        UNSUPPORTED[name](z)
    assert "internal check" not in str(e.value)


def test_creation_ops_that_cannot_make_complex64_say_so():
    with pytest.raises((TypeError, RuntimeError), match=r"complex64"):
        flow.randn(3, dtype=flow.complex64)
    with pytest.raises((TypeError, RuntimeError), match=r"complex64"):
        flow.arange(3, dtype=flow.complex64)


def test_real_tensors_are_unaffected():
    a, b = _f(3, 4), _f(3, 4, seed=1)
    _close(flow.tensor(a) * flow.tensor(b), a * b)
    _close(flow.tensor(a).abs(), np.abs(a))
    x = flow.tensor(a, requires_grad=True)
    (x * 2).sum().backward()
    _close(x.grad, np.full_like(a, 2.0))


def test_complex128_round_trips_numpy_and_computes_in_float64():
    c = _f(3, 2).astype(np.float64) + 1j * _f(3, 2, seed=1).astype(np.float64)
    z = flow.tensor(c)
    assert z.dtype == flow.complex128 and flow.cdouble == flow.complex128
    assert flow.view_as_real(z).dtype == flow.float64
    np.testing.assert_array_equal(z.numpy(), c)
    _close(z * z, torch.tensor(c) * torch.tensor(c))
    w = flow.view_as_complex(flow.tensor(_f(3, 2)))  # complex64 with float64: complex128
    assert (w * flow.tensor(_f(3).astype(np.float64))).dtype == flow.complex128
    assert z.to(flow.complex64).dtype == flow.complex64
