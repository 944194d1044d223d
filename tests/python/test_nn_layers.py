"""nn layers and nn.functional against numpy reference math."""

import math

import numpy as np
import pytest

import oneflowlike as flow
from oneflowlike import nn
from oneflowlike.nn import functional as F

RNG = np.random.RandomState(0)


def t(array, dtype=None):
    return flow.tensor(np.asarray(array), dtype=dtype)


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def close(actual, expected, tol=1e-5):
    np.testing.assert_allclose(actual.numpy(), expected, rtol=tol, atol=tol)


def test_linear_forward_is_x_wt_plus_b():
    lin = nn.Linear(5, 3)
    x = RNG.randn(4, 5).astype(np.float32)
    expected = x @ lin.weight.numpy().T + lin.bias.numpy()
    close(lin(t(x)), expected)
    assert nn.Linear(5, 3, bias=False).bias is None


def test_linear_default_init_is_bounded_by_one_over_sqrt_fan_in():
    lin = nn.Linear(64, 256)
    bound = 1 / math.sqrt(64)
    assert np.abs(lin.weight.numpy()).max() <= bound
    assert np.abs(lin.bias.numpy()).max() <= bound
    assert lin.weight.numpy().std() > 0.8 * bound / math.sqrt(3)


def test_embedding_looks_up_rows_and_zeroes_padding_row():
    emb = nn.Embedding(10, 4, padding_idx=-1)
    assert emb.padding_idx == 9
    np.testing.assert_array_equal(emb.weight.numpy()[9], np.zeros(4, np.float32))
    idx = np.array([[1, 9], [3, 3]], np.int64)
    close(emb(t(idx, flow.int64)), emb.weight.numpy()[idx])
    pretrained = nn.Embedding.from_pretrained(t(np.eye(3, dtype=np.float32)))
    assert not pretrained.weight.requires_grad


def test_layer_norm_normalises_last_dims():
    ln = nn.LayerNorm(6)
    x = RNG.randn(2, 3, 6).astype(np.float32)
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    close(ln(t(x)), (x - mu) / np.sqrt(var + 1e-5), 1e-4)
    assert [name for name, _ in ln.named_parameters()] == ["weight", "bias"]


def test_rms_norm_scales_by_root_mean_square():
    norm = nn.RMSNorm([4], eps=1e-6)
    x = RNG.randn(3, 4).astype(np.float32)
    close(norm(t(x)), x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6), 1e-4)


def test_activations_match_numpy():
    x = RNG.randn(3, 5).astype(np.float32)
    close(nn.ReLU()(t(x)), np.maximum(x, 0))
    close(nn.Sigmoid()(t(x)), 1 / (1 + np.exp(-x)))
    close(nn.Tanh()(t(x)), np.tanh(x))
    close(nn.SiLU()(t(x)), x / (1 + np.exp(-x)))
    gelu_tanh = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    close(nn.GELU(approximate="tanh")(t(x)), gelu_tanh, 1e-4)
    close(nn.Softmax(dim=0)(t(x)), softmax(x, 0))
    close(nn.LogSoftmax(dim=1)(t(x)), np.log(softmax(x, 1)), 1e-4)
    close(F.softmax(t(x), dim=-1), softmax(x))
    close(nn.LeakyReLU(0.2)(t(x)), np.where(x > 0, x, 0.2 * x))


def test_dropout_is_identity_in_eval_and_scales_in_training():
    drop = nn.Dropout(0.5)
    x = flow.ones(1000)
    out = drop(x).numpy()
    assert set(np.unique(out)) <= {0.0, 2.0}
    assert 300 < (out == 0).sum() < 700
    drop.eval()
    close(drop(x), np.ones(1000))
    with pytest.raises(ValueError):
        nn.Dropout(1.5)


def test_cross_entropy_matches_numpy_with_ignore_index_and_smoothing():
    logits = RNG.randn(5, 4).astype(np.float32)
    target = np.array([0, 3, -100, 1, 2], np.int64)
    logp = np.log(softmax(logits))
    keep = target != -100
    nll = -logp[keep, target[keep]]
    close(nn.CrossEntropyLoss()(t(logits), t(target, flow.int64)), nll.mean(), 1e-5)
    close(F.cross_entropy(t(logits), t(target), reduction="sum"), nll.sum(), 1e-5)
    smoothed = (0.9 * nll - 0.1 * logp[keep].mean(-1)).mean()
    loss = nn.CrossEntropyLoss(label_smoothing=0.1)(t(logits), t(target))
    close(loss, smoothed, 1e-5)


def test_nll_and_mse_losses_match_numpy():
    logp = np.log(softmax(RNG.randn(3, 4))).astype(np.float32)
    target = np.array([1, 0, 3], np.int64)
    close(nn.NLLLoss()(t(logp), t(target)), -logp[np.arange(3), target].mean())
    a, b = RNG.randn(2, 3).astype(np.float32), RNG.randn(2, 3).astype(np.float32)
    close(nn.MSELoss()(t(a), t(b)), ((a - b) ** 2).mean())
    close(nn.MSELoss(reduction="none")(t(a), t(b)), (a - b) ** 2)
    with pytest.raises(ValueError):
        nn.MSELoss(reduction="avg")


def test_containers_index_iterate_and_register():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear)
    assert isinstance(seq[1:], nn.Sequential) and len(seq[1:]) == 2
    assert seq(flow.ones(4, 2)).shape == (4, 1)
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    layers.append(nn.Identity())
    assert len(layers) == 4 and len(list(layers.parameters())) == 6
    assert [name for name, _ in layers.named_children()][-1] == "3"
    heads = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.ReLU()})
    assert list(heads.keys()) == ["a", "b"] and "a" in heads
    assert [name for name, _ in heads.named_parameters()] == ["a.weight", "a.bias"]


def test_flatten_and_identity_shapes():
    x = flow.ones(2, 3, 4, 5)
    assert nn.Flatten()(x).shape == (2, 60)
    assert nn.Flatten(0, 2)(x).shape == (24, 5)
    assert nn.Identity(7, key="ignored")(x) is x


def conv2d_reference(x, w, b, stride, padding):
    x = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    n, _, h, wd = x.shape
    co, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, co, oh, ow), np.float32)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, :, i * stride : i * stride + kh, j * stride : j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out + b[None, :, None, None]


def test_conv2d_matches_numpy_with_int_stride_and_padding():
    conv = nn.Conv2d(2, 3, kernel_size=3, stride=2, padding=1)
    assert conv.weight.shape == (3, 2, 3, 3) and conv.stride == (2, 2)
    x = RNG.randn(2, 2, 7, 7).astype(np.float32)
    expected = conv2d_reference(x, conv.weight.numpy(), conv.bias.numpy(), 2, 1)
    close(conv(t(x)), expected, 1e-4)


def test_conv2d_same_padding_keeps_spatial_size():
    conv = nn.Conv2d(1, 1, kernel_size=3, padding="same")
    assert conv(flow.ones(1, 1, 5, 6)).shape == (1, 1, 5, 6)


def test_pooling_matches_numpy():
    x = RNG.randn(1, 2, 4, 4).astype(np.float32)
    blocks = x.reshape(1, 2, 2, 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(1, 2, 2, 2, 4)
    close(nn.MaxPool2d(2)(t(x)), blocks.max(-1))
    close(nn.AvgPool2d(2)(t(x)), blocks.mean(-1))


def test_batch_norm_2d_updates_running_stats_in_training_only():
    bn = nn.BatchNorm2d(3, momentum=0.1)
    x = (RNG.randn(4, 3, 2, 2) * 2 + 1).astype(np.float32)
    out = bn(t(x))
    mean, var = x.mean((0, 2, 3)), x.var((0, 2, 3))
    expected = (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
    close(out, expected, 1e-4)
    n = x.size / 3
    close(bn.running_mean, 0.1 * mean, 1e-5)
    close(bn.running_var, 0.9 + 0.1 * var * n / (n - 1), 1e-4)
    assert bn.num_batches_tracked.item() == 1 and bn.num_batches_tracked.shape == ()
    assert "num_batches_tracked" in bn.state_dict()
    bn.eval()
    running_mean, running_var = bn.running_mean.numpy().copy(), bn.running_var.numpy().copy()
    rm, rv = running_mean[None, :, None, None], running_var[None, :, None, None]
    close(bn(t(x)), (x - rm) / np.sqrt(rv + 1e-5), 1e-4)
    close(bn.running_mean, running_mean)


def mha_reference(q, k, v, mha, mask=None):
    e, h = mha.embed_dim, mha.num_heads
    d = e // h
    w, b = mha.in_proj_weight.numpy(), mha.in_proj_bias.numpy()

    def heads(x, i):
        y = x @ w[i * e : (i + 1) * e].T + b[i * e : (i + 1) * e]
        return y.reshape(y.shape[0], y.shape[1], h, d).transpose(0, 2, 1, 3)

    scores = heads(q, 0) @ heads(k, 1).transpose(0, 1, 3, 2) / math.sqrt(d)
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    probs = softmax(scores)
    out = (probs @ heads(v, 2)).transpose(0, 2, 1, 3).reshape(q.shape[0], q.shape[1], e)
    out = out @ mha.out_proj.weight.numpy().T + mha.out_proj.bias.numpy()
    return out, probs.mean(1)


@pytest.mark.parametrize("need_weights", [True, False])
def test_multihead_attention_batch_first_matches_numpy(need_weights):
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    with flow.no_grad():
        mha.in_proj_bias.normal_(0, 0.1)
    q, kv = RNG.randn(2, 3, 8).astype(np.float32), RNG.randn(2, 5, 8).astype(np.float32)
    out, weights = mha(t(q), t(kv), t(kv), need_weights=need_weights)
    expected, expected_weights = mha_reference(q, kv, kv, mha)
    close(out, expected, 1e-4)
    if need_weights:
        close(weights, expected_weights, 1e-5)
    else:
        assert weights is None


def test_multihead_attention_sequence_first_and_causal_mask():
    mha = nn.MultiheadAttention(4, 1)
    x = RNG.randn(3, 2, 4).astype(np.float32)  # (L, N, E)
    causal = np.triu(np.ones((3, 3), bool), 1)
    for need_weights in (True, False):
        out, _ = mha(t(x), t(x), t(x), attn_mask=t(causal), need_weights=need_weights)
        xb = x.transpose(1, 0, 2)
        expected, _ = mha_reference(xb, xb, xb, mha, causal)
        close(out, expected.transpose(1, 0, 2), 1e-4)
        out2, _ = mha(t(x), t(x), t(x), is_causal=True, need_weights=need_weights)
        close(out2, expected.transpose(1, 0, 2), 1e-4)


def test_multihead_attention_key_padding_mask_ignores_padded_keys():
    mha = nn.MultiheadAttention(4, 2, batch_first=True)
    q, kv = RNG.randn(1, 2, 4).astype(np.float32), RNG.randn(1, 3, 4).astype(np.float32)
    pad = np.array([[False, False, True]])
    out, _ = mha(t(q), t(kv), t(kv), key_padding_mask=t(pad), need_weights=False)
    expected, _ = mha_reference(q, kv[:, :2], kv[:, :2], mha)
    close(out, expected, 1e-4)


def test_multihead_attention_parameters_mirror_torch_names():
    names = [name for name, _ in nn.MultiheadAttention(8, 2).named_parameters()]
    assert names == ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    with pytest.raises(ValueError):
        nn.MultiheadAttention(6, 4)
