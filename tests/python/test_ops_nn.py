"""nn ops: softmax family, losses, norms, embedding, dropout and attention against numpy."""

import math

import numpy as np
import pytest

import oneflowlike as flow
from oneflowlike.nn import functional as F
from _check import FLOAT_DTYPES, assert_close, check_grad, rng, tensor, to_numpy


def np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


# ---- softmax / log_softmax ---------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -2])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_any_dim(dim, log):
    x = rng().randn(2, 3, 4) * 3
    fn = F.log_softmax if log else F.softmax
    ref = (np_log_softmax if log else np_softmax)(x, dim)
    assert_close(fn(tensor(x), dim=dim), ref)
    assert_close((tensor(x).log_softmax if log else tensor(x).softmax)(dim), ref)
    assert_close((flow.log_softmax if log else flow.softmax)(tensor(x), dim), ref)
    check_grad(lambda t: fn(t, dim=dim), [rng(1).randn(2, 3, 2)])


@pytest.mark.parametrize("log", [False, True])
def test_softmax_non_contiguous_and_dtypes(log):
    fn = F.log_softmax if log else F.softmax
    ref = np_log_softmax if log else np_softmax
    x = rng().randn(5, 4)
    assert_close(fn(tensor(x).t(), dim=1), ref(x.T, 1))
    assert_close(fn(tensor(x)[:, ::2], dim=0), ref(x[:, ::2], 0))
    check_grad(lambda t: fn(t.t()[1:], dim=-1), [rng(1).randn(3, 3)])
    for name in ("float32", "float16", "bfloat16"):
        dt = FLOAT_DTYPES[name]
        xt = tensor(x, dtype=dt)
        out = fn(xt, dim=1)
        assert out.dtype == dt
        assert_close(out, ref(to_numpy(xt).astype(np.float64), 1), rtol=2e-2, atol=2e-2)
    check_grad(lambda t: fn(t, dim=1), [x[:2]], dtype=flow.float32, rtol=1e-3, atol=1e-4)


def test_softmax_is_stable_and_handles_masked_rows():
    x = tensor(np.array([[1000.0, 0.0, -1000.0], [-np.inf, 0.0, -np.inf]]))
    assert_close(F.softmax(x, dim=1), np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]))
    assert_close(F.log_softmax(x, dim=1)[0, 0], np.array(0.0))


def test_softmax_of_0d_and_zero_size():
    assert_close(F.softmax(tensor(np.array(3.0)), dim=0), np.array(1.0))
    out = F.softmax(flow.ones(0, 4), dim=1)
    assert tuple(out.shape) == (0, 4)


def test_softmax_integer_input_becomes_float():
    out = flow.softmax(flow.tensor([1, 2, 3]), 0)
    assert out.dtype == flow.float32
    assert_close(out, np_softmax(np.array([1.0, 2.0, 3.0]), 0))


# ---- cross_entropy / nll_loss -------------------------------------------------------------


def np_cross_entropy(x, t, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    if x.ndim == 1:
        x, t = x[None], np.asarray(t).reshape(1)
        squeeze = True
    else:
        squeeze = False
    c = x.shape[1]
    shape = t.shape
    logp = np_log_softmax(np.moveaxis(x, 1, -1).reshape(-1, c), -1)
    tt = t.reshape(-1)
    valid = tt != ignore_index
    safe = np.where(valid, tt, 0)
    nll = -logp[np.arange(len(tt)), safe] * valid
    smooth = -logp.mean(-1) * valid
    loss = (1 - label_smoothing) * nll + label_smoothing * smooth
    if reduction == "none":
        return loss.reshape(()) if squeeze else loss.reshape(shape)
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / valid.sum()


def _targets(shape, classes, seed=0, ignore=None):
    t = rng(seed).randint(0, classes, size=shape)
    if ignore is not None:
        t.reshape(-1)[::3] = ignore
    return t


CE_CASES = [
    ((4, 5), (4,)),
    ((2, 5, 3), (2, 3)),
    ((2, 4, 2, 3), (2, 2, 3)),
    ((5,), ()),
]


@pytest.mark.parametrize("shapes", CE_CASES, ids=str)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
@pytest.mark.parametrize("ignore", [None, 1, -100])
def test_cross_entropy(shapes, reduction, label_smoothing, ignore):
    xs, ts = shapes
    classes = xs[0] if len(xs) == 1 else xs[1]
    x = rng().randn(*xs) * 2
    t = _targets(ts, classes, ignore=ignore) if ts else np.array(2)
    kwargs = dict(reduction=reduction, label_smoothing=label_smoothing)
    if ignore is not None:
        kwargs["ignore_index"] = ignore
    out = F.cross_entropy(tensor(x), flow.tensor(t), **kwargs)
    ref = np_cross_entropy(x, t, ignore if ignore is not None else -100, reduction, label_smoothing)
    assert_close(out, ref)
    check_grad(lambda a: F.cross_entropy(a, flow.tensor(t), **kwargs), [x])


def test_cross_entropy_float32_and_int32_targets():
    x = rng().randn(6, 4).astype(np.float32)
    t = np.array([0, 3, 1, 1, 2, 0], np.int32)
    out = F.cross_entropy(flow.tensor(x), flow.tensor(t))
    assert out.dtype == flow.float32
    assert_close(out, np_cross_entropy(x.astype(np.float64), t), rtol=1e-5, atol=1e-6)
    check_grad(
        lambda a: F.cross_entropy(a, flow.tensor(t[:3])),
        [x[:3]],
        dtype=flow.float32,
        eps=1e-3,
        rtol=1e-3,
        atol=1e-4,
    )


def test_cross_entropy_with_probability_targets():
    x = rng().randn(3, 4)
    p = np_softmax(rng(1).randn(3, 4), 1)
    out = F.cross_entropy(tensor(x), tensor(p))
    assert_close(out, np.mean(-(p * np_log_softmax(x, 1)).sum(1)))
    check_grad(lambda a: F.cross_entropy(a, tensor(p), reduction="sum"), [x])


def test_cross_entropy_with_probability_targets_and_label_smoothing():
    x = rng().randn(3, 4)
    p = np_softmax(rng(1).randn(3, 4), 1)
    ls = 0.3
    smoothed = p * (1 - ls) + ls / 4
    out = F.cross_entropy(tensor(x), tensor(p), label_smoothing=ls)
    assert_close(out, np.mean(-(smoothed * np_log_softmax(x, 1)).sum(1)))


def test_cross_entropy_of_half_logits_is_computed_in_float32_and_given_in_their_dtype():
    # Logits far apart (a half rounds 1000.5 to 1000): the float32 result, rounded once.
    x = (np.random.default_rng(4).standard_normal((6, 9)) * 300).astype(np.float16)
    t = np.arange(6) % 9
    want = np_cross_entropy(x.astype(np.float64), t, reduction="none")
    out = F.cross_entropy(flow.tensor(x), flow.tensor(t), reduction="none")
    assert out.dtype == flow.float16
    assert_close(out, want.astype(np.float16), rtol=1e-3, atol=1e-2)
    with flow.autocast("cpu", dtype=flow.float16):  # autocast gives cross_entropy in float32
        assert F.cross_entropy(flow.tensor(x), flow.tensor(t)).dtype == flow.float32


def test_cross_entropy_all_ignored_mean_is_nan():
    out = F.cross_entropy(flow.randn(2, 3), flow.tensor([-100, -100]))
    assert np.isnan(out.item())


@pytest.mark.parametrize("shapes", CE_CASES[:3], ids=str)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss(shapes, reduction):
    xs, ts = shapes
    logp = np_log_softmax(rng().randn(*xs), 1)
    t = _targets(ts, xs[1], ignore=-100)
    out = F.nll_loss(tensor(logp), flow.tensor(t), reduction=reduction)
    assert_close(out, np_cross_entropy(logp, t, reduction=reduction))
    check_grad(lambda a: F.nll_loss(a, flow.tensor(t), reduction=reduction), [logp])


def test_nll_loss_target_out_of_range_raises_index_error():
    with pytest.raises(IndexError, match=r"\[nll_loss\].*5"):
        F.nll_loss(flow.randn(2, 5), flow.tensor([1, 5]))
    with pytest.raises(IndexError, match=r"\[nll_loss\]"):
        F.cross_entropy(flow.randn(2, 5), flow.tensor([-1, 0]))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss(reduction):
    a, b = rng().randn(3, 4), rng(1).randn(3, 4)
    out = F.mse_loss(tensor(a), tensor(b), reduction=reduction)
    sq = (a - b) ** 2
    assert_close(out, {"mean": sq.mean(), "sum": sq.sum(), "none": sq}[reduction])
    check_grad(lambda x, y: F.mse_loss(x, y, reduction=reduction), [a, b])


def test_loss_rejects_unknown_reduction():
    with pytest.raises((RuntimeError, ValueError)):
        flow._C.mse_loss(flow.ones(2), flow.ones(2), reduction="avg")
    with pytest.raises((RuntimeError, ValueError), match="avg"):
        flow._C.cross_entropy(flow.ones(2, 3), flow.tensor([0, 1]), reduction="avg")


# ---- layer_norm / rms_norm ----------------------------------------------------------------


def np_layer_norm(x, ndims, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - ndims, x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


def np_rms_norm(x, ndims, w=None, eps=None):
    axes = tuple(range(x.ndim - ndims, x.ndim))
    eps = np.finfo(np.float64).eps if eps is None else eps
    y = x / np.sqrt((x**2).mean(axis=axes, keepdims=True) + eps)
    return y * (1 if w is None else w)


@pytest.mark.parametrize("ns", [(4,), (3, 4)], ids=str)
@pytest.mark.parametrize("affine", ["none", "weight", "both"])
def test_layer_norm(ns, affine):
    r = rng()
    x = r.randn(2, 3, 4) * 2 + 1
    w = r.randn(*ns) if affine != "none" else None
    b = r.randn(*ns) if affine == "both" else None
    out = F.layer_norm(
        tensor(x), ns, None if w is None else tensor(w), None if b is None else tensor(b)
    )
    assert_close(out, np_layer_norm(x, len(ns), w, b), rtol=1e-8, atol=1e-8)
    xs = r.randn(2, 2, 4)[:, :, -ns[-1] :] if len(ns) == 1 else r.randn(2, 3, 4)[:1]
    params = [xs] + [p for p in (w, b) if p is not None]

    def fn(x, *p):
        wt = p[0] if len(p) > 0 else None
        bt = p[1] if len(p) > 1 else None
        return F.layer_norm(x, ns, wt, bt)

    check_grad(fn, params, atol=1e-5)


def test_layer_norm_eps_and_non_contiguous_and_dtypes():
    x = rng().randn(4, 6) * 0.01
    out = F.layer_norm(tensor(x).t(), (4,), eps=1e-2)
    assert_close(out, np_layer_norm(x.T, 1, eps=1e-2), rtol=1e-8, atol=1e-8)
    check_grad(lambda t: F.layer_norm(t.t(), (3,), eps=1e-2), [rng(1).randn(3, 2)])
    for name in ("float32", "float16", "bfloat16"):
        dt = FLOAT_DTYPES[name]
        xt = tensor(rng(2).randn(3, 8), dtype=dt)
        o = F.layer_norm(xt, (8,), tensor(np.ones(8), dtype=dt), tensor(np.zeros(8), dtype=dt))
        assert o.dtype == dt
        assert_close(o, np_layer_norm(to_numpy(xt).astype(np.float64), 1), rtol=3e-2, atol=3e-2)


def test_layer_norm_float32_backward():
    r = rng()
    check_grad(
        lambda x, w, b: F.layer_norm(x, (3,), w, b),
        [r.randn(2, 3), r.randn(3), r.randn(3)],
        dtype=flow.float32,
        eps=1e-3,
        rtol=1e-2,
        atol=1e-3,
    )


def test_layer_norm_shape_mismatch_raises():
    with pytest.raises(RuntimeError, match=r"\[layer_norm\].*\(5,\).*\(2, 4\)"):
        F.layer_norm(flow.ones(2, 4), (5,))
    with pytest.raises(RuntimeError, match=r"\[layer_norm\].*weight"):
        F.layer_norm(flow.ones(2, 4), (4,), flow.ones(3))


@pytest.mark.parametrize("ns", [(4,), (3, 4)], ids=str)
@pytest.mark.parametrize("weight", [False, True])
@pytest.mark.parametrize("eps", [None, 1e-3])
def test_rms_norm(ns, weight, eps):
    r = rng()
    x = r.randn(2, 3, 4)
    w = r.randn(*ns) if weight else None
    out = F.rms_norm(tensor(x), ns, None if w is None else tensor(w), eps)
    assert_close(out, np_rms_norm(x, len(ns), w, eps), rtol=1e-8, atol=1e-8)
    params = [r.randn(2, 3, 4)[:1]] + ([w] if weight else [])
    check_grad(lambda x, *p: F.rms_norm(x, ns, p[0] if p else None, eps), params, atol=1e-5)


def test_rms_norm_default_eps_follows_dtype():
    x = np.full((1, 4), 1e-4)
    out32 = F.rms_norm(tensor(x, dtype=flow.float32), (4,))
    ref = x / np.sqrt(1e-8 + np.finfo(np.float32).eps)
    assert_close(out32, ref, rtol=1e-4, atol=1e-6)


# ---- embedding ---------------------------------------------------------------------------


@pytest.mark.parametrize("padding_idx", [None, 0, 2, -1])
def test_embedding_forward_and_padding_gradient(padding_idx):
    r = rng()
    w = r.randn(5, 3)
    idx = np.array([[0, 2, 4], [2, 2, 1]])
    out = F.embedding(flow.tensor(idx), tensor(w), padding_idx=padding_idx)
    assert_close(out, w[idx])
    wt = tensor(w, requires_grad=True)
    g = r.randn(2, 3, 3)
    F.embedding(flow.tensor(idx), wt, padding_idx=padding_idx).backward(tensor(g))
    expected = np.zeros_like(w)
    np.add.at(expected, idx, g)
    if padding_idx is not None:
        expected[padding_idx % 5] = 0
    assert_close(wt.grad, expected)


def test_embedding_gradient_against_finite_differences():
    idx = flow.tensor([3, 0, 3, 1])
    check_grad(lambda w: F.embedding(idx, w), [rng().randn(4, 2)])


def test_embedding_index_errors():
    with pytest.raises(IndexError, match=r"\[embedding\].*5"):
        F.embedding(flow.tensor([0, 5]), flow.ones(5, 2))
    with pytest.raises(TypeError, match=r"\[embedding\].*float"):
        F.embedding(flow.tensor([0.0, 1.0]), flow.ones(5, 2))


# ---- dropout -----------------------------------------------------------------------------


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_statistics(p):
    flow.manual_seed(0)
    x = flow.ones(40000)
    y = to_numpy(F.dropout(x, p=p))
    zero_frac = np.mean(y == 0)
    assert abs(zero_frac - p) < 0.02
    assert abs(y.mean() - 1.0) < 0.05
    kept = y[y != 0]
    np.testing.assert_allclose(kept, 1.0 / (1.0 - p), rtol=1e-6)


def test_dropout_gradient_uses_the_same_mask():
    flow.manual_seed(3)
    x = tensor(rng().randn(1000), requires_grad=True)
    y = F.dropout(x, p=0.4)
    y.sum().backward()
    mask = to_numpy(y) != 0
    assert_close(x.grad, np.where(mask, 1 / 0.6, 0.0))


def test_dropout_eval_and_edge_probabilities():
    x = flow.randn(10)
    assert_close(F.dropout(x, p=0.5, training=False), to_numpy(x), rtol=0, atol=0)
    assert_close(flow._C.dropout(x, p=0.5, training=False), to_numpy(x), rtol=0, atol=0)
    assert_close(F.dropout(x, p=0.0), to_numpy(x), rtol=0, atol=0)
    assert_close(F.dropout(x, p=1.0), np.zeros(10, np.float32))
    with pytest.raises((RuntimeError, ValueError)):
        flow._C.dropout(x, p=1.5)


def test_dropout_is_reproducible_under_manual_seed():
    flow.manual_seed(42)
    a = to_numpy(F.dropout(flow.ones(100)))
    flow.manual_seed(42)
    b = to_numpy(F.dropout(flow.ones(100)))
    np.testing.assert_array_equal(a, b)
    c = to_numpy(F.dropout(flow.ones(100)))
    assert not np.array_equal(a, c)


# ---- scaled_dot_product_attention ---------------------------------------------------------


def np_sdpa(q, k, v, mask=None, causal=False, scale=None):
    s = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ np.swapaxes(k, -1, -2) * s
    L, S = q.shape[-2], k.shape[-2]
    if causal:
        scores = np.where(np.tril(np.ones((L, S), bool)), scores, -np.inf)
    elif mask is not None:
        scores = np.where(mask, scores, -np.inf) if mask.dtype == bool else scores + mask
    return np_softmax(scores, -1) @ v


def _qkv(b=2, h=2, L=3, S=3, E=4, Ev=5, seed=0):
    r = rng(seed)
    return r.randn(b, h, L, E), r.randn(b, h, S, E), r.randn(b, h, S, Ev)


@pytest.mark.parametrize("L,S", [(3, 3), (2, 4), (4, 4)])
@pytest.mark.parametrize("mode", ["none", "causal", "bool_mask", "float_mask", "scale"])
def test_sdpa_matches_numpy(L, S, mode):
    q, k, v = _qkv(L=L, S=S)
    r = rng(7)
    mask, kwargs = None, {}
    if mode == "causal":
        kwargs["is_causal"] = True
    elif mode == "bool_mask":
        mask = r.rand(L, S) > 0.3
        mask[:, 0] = True  # no fully masked rows
        kwargs["attn_mask"] = flow.tensor(mask)
    elif mode == "float_mask":
        mask = r.randn(2, 1, L, S)
        kwargs["attn_mask"] = tensor(mask)
    elif mode == "scale":
        kwargs["scale"] = 0.3
    out = F.scaled_dot_product_attention(tensor(q), tensor(k), tensor(v), **kwargs)
    ref = np_sdpa(q, k, v, mask, causal=mode == "causal", scale=kwargs.get("scale"))
    assert_close(out, ref)
    q2, k2, v2 = _qkv(b=1, h=1, L=L, S=S, E=2, Ev=2, seed=1)
    check_grad(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, **kwargs), [q2, k2, v2])


def test_sdpa_three_dim_inputs_and_float32():
    r = rng()
    q, k, v = r.randn(2, 3, 4), r.randn(2, 5, 4), r.randn(2, 5, 2)
    out = F.scaled_dot_product_attention(
        tensor(q, dtype=flow.float32), tensor(k, dtype=flow.float32), tensor(v, dtype=flow.float32)
    )
    assert out.dtype == flow.float32
    assert_close(out, np_sdpa(q, k, v), rtol=1e-5, atol=1e-5)


def test_sdpa_rejects_mask_with_causal_and_bad_shapes():
    q = flow.ones(1, 2, 4)
    with pytest.raises(RuntimeError, match=r"\[scaled_dot_product_attention\]"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=flow.ones(2, 2), is_causal=True)
    with pytest.raises(RuntimeError, match=r"\[scaled_dot_product_attention\].*\(1, 2, 3\)"):
        F.scaled_dot_product_attention(q, flow.ones(1, 2, 3), q)
