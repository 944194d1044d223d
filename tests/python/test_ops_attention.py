"""flash_attention, the fused op scaled_dot_product_attention calls where a fused kernel serves
the call (cuDNN's on CUDA): its CPU kernel against numpy and the composite, its gradients and
double backward, its checks, and its metas without data."""

import numpy as np
import pytest

import oneflowlike as flow
from oneflowlike.nn import functional as F
from _check import assert_close, check_grad, rng, tensor
from test_ops_nn import np_sdpa


def _qkv(b=2, h=3, L=5, S=5, E=8, Ev=8, seed=0):
    r = rng(seed)
    return r.randn(b, h, L, E), r.randn(b, h, S, E), r.randn(b, h, S, Ev)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("L,S,Ev", [(5, 5, 8), (3, 6, 4), (6, 3, 8)], ids=str)
def test_flash_attention_matches_numpy(causal, L, S, Ev):
    q, k, v = _qkv(L=L, S=S, Ev=Ev)
    out = flow._C.flash_attention(tensor(q), tensor(k), tensor(v), 0.4, causal)
    assert tuple(out.shape) == (2, 3, L, Ev)
    assert_close(out, np_sdpa(q, k, v, causal=causal, scale=0.4))


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_flash_attention_gradients_match_finite_differences(causal):
    q, k, v = _qkv(b=1, h=2, L=3, S=4, E=2, Ev=3, seed=1)
    check_grad(lambda a, b, c: flow._C.flash_attention(a, b, c, 0.7, causal), [q, k, v])


def test_flash_attention_in_float32_with_strided_heads_matches_the_composite():
    # q, k, v as a projection's heads: (B, L, H, D) transposed to (B, H, L, D), not contiguous.
    r = rng(2)
    x = [tensor(r.randn(2, 7, 3, 8), dtype=flow.float32).transpose(1, 2) for _ in range(3)]
    for causal in (False, True):
        got = flow._C.flash_attention(*x, 0.35, causal)
        with flow.backends.cuda.sdp_kernel(enable_flash=False):
            want = F.scaled_dot_product_attention(*x, is_causal=causal, scale=0.35)
        assert got.dtype == flow.float32
        assert_close(got, want, rtol=1e-5, atol=1e-6)


def _grads(fn, arrays, second_order):
    leaves = [tensor(a, requires_grad=True) for a in arrays]
    out = fn(*leaves)
    weight = tensor(rng(3).randn(*out.shape))
    if not second_order:
        (out * weight).sum().backward()
        return [leaf.grad.numpy() for leaf in leaves]
    first = flow.autograd.grad((out * weight).sum(), leaves, create_graph=True)
    sum((g * g).sum() for g in first).backward()
    return [leaf.grad.numpy() for leaf in leaves]


@pytest.mark.parametrize("second_order", [False, True], ids=["backward", "double_backward"])
def test_flash_attention_gradients_equal_the_composite(second_order):
    q, k, v = _qkv(L=4, S=6, E=4, Ev=5, seed=4)
    fused = _grads(
        lambda a, b, c: flow._C.flash_attention(a, b, c, 0.5, True), [q, k, v], second_order
    )
    parts = _grads(
        lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True, scale=0.5),
        [q, k, v],
        second_order,
    )
    for got, want in zip(fused, parts):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10)


def test_flash_attention_checks_name_the_op_and_the_shapes():
    q = flow.ones(1, 2, 4, 8)
    with pytest.raises(RuntimeError, match=r"\[flash_attention\].*4-d"):
        flow._C.flash_attention(flow.ones(2, 4, 8), q, q, 1.0)
    with pytest.raises(RuntimeError, match=r"\[flash_attention\].*\(1, 2, 4, 6\)"):
        flow._C.flash_attention(q, flow.ones(1, 2, 4, 6), q, 1.0)
    with pytest.raises(TypeError, match=r"\[flash_attention\].*float64"):
        flow._C.flash_attention(q, q, q.double(), 1.0)


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_in_the_load_balanced_order_the_mask_follows_the_positions(ranks):
    """balance=n: the sequence stored in context parallelism's load-balanced order for n ranks
    (F.load_balance), the causal mask by position. Output and gradients equal the call in
    order, put in that order."""
    q, k, v = (tensor(a).requires_grad_() for a in _qkv(L=12, S=12, seed=2))
    w = tensor(rng(3).randn(2, 3, 12, 8))
    want = flow._C.flash_attention(q, k, v, 0.4, True)
    (want * w).sum().backward()
    stored = [F.load_balance(t.detach(), ranks).requires_grad_() for t in (q, k, v)]
    got = flow._C.flash_attention(*stored, 0.4, True, balance=ranks)
    (got * F.load_balance(w, ranks)).sum().backward()
    assert_close(got, F.load_balance(want, ranks))
    assert_close(F.load_balance(got, ranks, inverse=True), want)
    for t, s in zip((q, k, v), stored):
        assert_close(s.grad, F.load_balance(t.grad, ranks))
    # A row sees the keys at or before its position, not its stored index: the order matters.
    if ranks > 1:
        assert not np.allclose(flow._C.flash_attention(*stored, 0.4, True).numpy(), got.numpy())


def test_the_load_balanced_order_raises_naming_the_op_the_flag_and_the_shapes():
    q = flow.ones(1, 2, 6, 8)
    with pytest.raises(
        RuntimeError, match=r"\[flash_attention\] balance=2 .*is_causal=True, q \(1, 2, 6, 8\)"
    ):
        flow._C.flash_attention(q, q, q, 1.0, True, balance=2)
    with pytest.raises(RuntimeError, match=r"balance=3 .*is_causal=False"):
        flow._C.flash_attention(q, q, q, 1.0, False, balance=3)
    with pytest.raises(ValueError, match=r"\[load_balance\] a sequence of 6 .* 2 x 2 chunks"):
        F.load_balance(q, 2)
    q = flow.ones(1, 2, 4, 8, requires_grad=True)
    out = flow._C.flash_attention(q, q, q, 1.0, True, balance=2)
    with pytest.raises(RuntimeError, match=r"double backward .*balance=2"):
        flow.autograd.grad(out.sum(), q, create_graph=True)


def test_flash_attention_infers_metas_without_data():
    q = flow.empty(2, 12, 1024, 64, device="meta")
    kv = flow.empty(2, 12, 512, 64, device="meta")
    out = flow._C.flash_attention(q, kv, kv, 0.125, True)
    assert out.device == flow.device("meta") and tuple(out.shape) == (2, 12, 1024, 64)


def _sdpa_and_grads(arrays, dtype, causal, fused, expand_k=True):
    # q as a projection's heads (transposed, row stride 3 x 16), k one row expanded (row stride
    # 0), v contiguous: the kernel reads the first two in place or densified.
    leaves = [tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
    q, k, v = leaves[0].transpose(1, 2), leaves[1], leaves[2]
    if expand_k:
        k = k.expand(-1, -1, arrays[2].shape[2], -1)
    with flow.backends.cuda.sdp_kernel(enable_flash=fused):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    kind = repr(out.grad_fn)
    (out * out).sum().backward()
    return kind, [out.numpy()] + [t.grad.numpy() for t in leaves]


@pytest.mark.parametrize("dtype", [flow.float32, flow.float64], ids=str)
@pytest.mark.parametrize(
    "L,S,causal", [(130, 130, True), (70, 150, True), (150, 70, True), (130, 90, False)], ids=str
)
def test_on_the_cpu_attention_is_the_fused_op_with_its_parts_values(dtype, L, S, causal):
    # The blocked CPU kernel: query rows in blocks of 64 (more than one here, a causal block
    # reading only the keys its last row sees). Outputs and gradients equal the parts'.
    r = rng(5)
    arrays = [r.randn(2, L, 3, 16), r.randn(2, 3, 1, 16), r.randn(2, 3, S, 8)]
    fused, got = _sdpa_and_grads(arrays, dtype, causal, True)
    parts, want = _sdpa_and_grads(arrays, dtype, causal, False)
    assert (fused, parts) == ("<flash_attentionBackward>", "<matmulBackward>")
    tol = {"rtol": 2e-4, "atol": 2e-5} if dtype == flow.float32 else {"rtol": 1e-10, "atol": 1e-12}
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, **tol)


def test_on_the_cpu_very_many_keys_take_smaller_blocks_of_rows():
    # 300,000 keys: a block of rows holds at most 2^20 scores, so the 7 rows go 3 at a time.
    r = rng(6)
    arrays = [r.randn(1, 7, 1, 2), r.randn(1, 1, 300_000, 2), r.randn(1, 1, 300_000, 3)]
    fused, got = _sdpa_and_grads(arrays, flow.float64, False, True, expand_k=False)
    parts, want = _sdpa_and_grads(arrays, flow.float64, False, False, expand_k=False)
    assert (fused, parts) == ("<flash_attentionBackward>", "<matmulBackward>")
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


def test_on_the_cpu_16_bit_attention_runs_as_its_parts():
    q = flow.randn(1, 2, 8, 16, dtype=flow.bfloat16).requires_grad_()
    assert repr(F.scaled_dot_product_attention(q, q, q, is_causal=True).grad_fn) == (
        "<matmulBackward>"
    )


def test_on_meta_16_bit_attention_is_the_fused_op_unless_switched_off_for_a_block():
    """A 16-bit step traced on the meta device is planned for GPUs, where cuDNN's fused kernel
    serves it; float32, a head dim over 128, or sdp_kernel(enable_flash=False) give the parts."""

    fused = repr(
        F.scaled_dot_product_attention(
            *[flow.empty(1, 1, 8, 16, device="meta", dtype=flow.bfloat16).requires_grad_()] * 3
        ).grad_fn
    )
    assert fused == "<flash_attentionBackward>"
    parts = "<matmulBackward>"
    q32 = flow.empty(1, 1, 8, 16, device="meta").requires_grad_()
    assert repr(F.scaled_dot_product_attention(q32, q32, q32).grad_fn) == parts
    wide = flow.empty(1, 1, 8, 160, device="meta", dtype=flow.float16).requires_grad_()
    assert repr(F.scaled_dot_product_attention(wide, wide, wide).grad_fn) == parts
    with flow.backends.cuda.sdp_kernel(enable_flash=False):
        assert not flow.backends.cuda.flash_sdp_enabled()
        q = flow.empty(1, 1, 8, 16, device="meta", dtype=flow.float16).requires_grad_()
        assert repr(F.scaled_dot_product_attention(q, q, q).grad_fn) == parts
    assert flow.backends.cuda.flash_sdp_enabled()  # restored, also after an exception:
    with pytest.raises(RuntimeError):
        with flow.backends.cuda.sdp_kernel(enable_flash=False):
            raise RuntimeError
    assert flow.backends.cuda.flash_sdp_enabled()
