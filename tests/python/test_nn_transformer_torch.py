"""nn.Transformer family and nn.MultiheadAttention against PyTorch (float64, weights copied)."""

import numpy as np
import pytest
import torch

import oneflowlike as flow
import oneflowlike.nn as nn
import oneflowlike.nn.functional as F

E, HEADS, FF = 4, 2, 6

# torch's own notice that its nested-tensor fast path is off (we have none)
pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")


def _f(t, grad=False):
    return flow.tensor(t.detach().numpy(), requires_grad=grad)


def _close(ours, theirs, tol=1e-10):
    theirs = theirs.detach().numpy()
    assert tuple(ours.shape) == theirs.shape
    np.testing.assert_allclose(ours.numpy(), theirs, rtol=tol, atol=tol)


def _copy_weights(ours, theirs):
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: _f(v) for k, v in theirs.state_dict().items()})


def _pair(cls, *args, **kwargs):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, cls)(*args, **kwargs).double()
    ours = getattr(nn, cls)(*args, **kwargs).double()
    _copy_weights(ours, theirs)
    return ours, theirs


def _check_grads(ours, theirs, tol=1e-10):
    mine = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        if p.grad is None:
            assert mine[name].grad is None or not mine[name].grad.numpy().any(), name
            continue
        assert mine[name].grad is not None, name
        _close(mine[name].grad, p.grad, tol)


def _inputs(rng, shape):
    x = rng.standard_normal(shape)
    return flow.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


def _key_padding(batch, length, kind):
    pad = np.zeros((batch, length), dtype=bool)
    pad[0, -1] = True
    if kind == "bool":
        return flow.tensor(pad), torch.tensor(pad)
    additive = np.where(pad, -1e9, 0.0)
    return flow.tensor(additive), torch.tensor(additive)


def _backward(out_f, out_t, weights):
    (out_t * torch.tensor(weights)).sum().backward()
    (out_f * flow.tensor(weights)).sum().backward()


MHA_CONFIGS = [
    dict(),
    dict(batch_first=True, bias=False),
    dict(kdim=3, vdim=5),
    dict(add_bias_kv=True, add_zero_attn=True),
    dict(add_zero_attn=True, batch_first=True),
]


@pytest.mark.parametrize("kwargs", MHA_CONFIGS)
@pytest.mark.parametrize("need_weights,average", [(True, True), (True, False), (False, True)])
def test_multihead_attention_matches_torch(kwargs, need_weights, average):
    ours, theirs = _pair("MultiheadAttention", E, HEADS, **kwargs)
    rng = np.random.default_rng(0)
    n, tgt, src = 2, 3, 4
    order = (
        (lambda b, t, e: (b, t, e)) if kwargs.get("batch_first") else (lambda b, t, e: (t, b, e))
    )
    fq, tq = _inputs(rng, order(n, tgt, E))
    fk, tk = _inputs(rng, order(n, src, kwargs.get("kdim", E)))
    fv, tv = _inputs(rng, order(n, src, kwargs.get("vdim", E)))
    attn_mask = np.triu(np.full((tgt, src), -1e9), 1)
    f_kpm, t_kpm = _key_padding(n, src, "float")
    args = dict(need_weights=need_weights, average_attn_weights=average)
    f_out, f_w = ours(fq, fk, fv, f_kpm, attn_mask=flow.tensor(attn_mask), **args)
    t_out, t_w = theirs(tq, tk, tv, t_kpm, attn_mask=torch.tensor(attn_mask), **args)
    _close(f_out, t_out)
    if need_weights:
        _close(f_w, t_w)
    else:
        assert f_w is None and t_w is None
    _backward(f_out, t_out, rng.standard_normal(tuple(t_out.shape)))
    for a, b in ((fq, tq), (fk, tk), (fv, tv)):
        _close(a.grad, b.grad)
    _check_grads(ours, theirs)


def test_multihead_attention_unbatched_and_3d_mask():
    ours, theirs = _pair("MultiheadAttention", E, HEADS)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, E))
    mask = rng.standard_normal((HEADS, 3, 3))
    f = ours(flow.tensor(x), flow.tensor(x), flow.tensor(x), attn_mask=flow.tensor(mask))
    t = theirs(*(torch.tensor(x),) * 3, attn_mask=torch.tensor(mask))
    _close(f[0], t[0])
    _close(f[1], t[1])
    kpm = np.array([False, False, True])
    f = ours(*(flow.tensor(x),) * 3, key_padding_mask=flow.tensor(kpm), need_weights=False)
    t = theirs(*(torch.tensor(x),) * 3, key_padding_mask=torch.tensor(kpm), need_weights=False)
    _close(f[0], t[0])
    assert repr(ours) == repr(theirs)


ENCODER_CONFIGS = [
    dict(),
    dict(norm_first=True, batch_first=True, activation="gelu"),
    dict(activation=F.gelu, bias=False, layer_norm_eps=1e-3),
]


@pytest.mark.parametrize("kwargs", ENCODER_CONFIGS)
@pytest.mark.parametrize("masks", ["none", "causal_bool_kpm", "float"])
def test_encoder_layer_and_stack_match_torch(kwargs, masks):
    theirs_kwargs = dict(kwargs)
    if theirs_kwargs.get("activation") is F.gelu:
        theirs_kwargs["activation"] = torch.nn.functional.gelu
    torch.manual_seed(0)
    t_layer = torch.nn.TransformerEncoderLayer(E, HEADS, FF, dropout=0.0, **theirs_kwargs)
    t_enc = torch.nn.TransformerEncoder(
        t_layer, 2, torch.nn.LayerNorm(E), enable_nested_tensor=False
    ).double()
    f_layer = nn.TransformerEncoderLayer(E, HEADS, FF, dropout=0.0, **kwargs)
    f_enc = nn.TransformerEncoder(f_layer, 2, nn.LayerNorm(E)).double()
    _copy_weights(f_enc, t_enc)
    rng = np.random.default_rng(2)
    n, length = 2, 4
    shape = (n, length, E) if kwargs.get("batch_first") else (length, n, E)
    fx, tx = _inputs(rng, shape)
    f_args, t_args = {}, {}
    if masks == "causal_bool_kpm":
        causal = np.triu(np.ones((length, length), dtype=bool), 1)
        f_args["mask"], t_args["mask"] = flow.tensor(causal), torch.tensor(causal)
        kpm = _key_padding(n, length, "bool")
        f_args["src_key_padding_mask"], t_args["src_key_padding_mask"] = kpm
    elif masks == "float":
        m = rng.standard_normal((length, length))
        f_args["mask"], t_args["mask"] = flow.tensor(m), torch.tensor(m)
        kpm = _key_padding(n, length, "float")
        f_args["src_key_padding_mask"], t_args["src_key_padding_mask"] = kpm
    f_out, t_out = f_enc(fx, **f_args), t_enc(tx, **t_args)
    _close(f_out, t_out)
    _backward(f_out, t_out, rng.standard_normal(shape))
    _close(fx.grad, tx.grad)
    _check_grads(f_enc, t_enc)


@pytest.mark.parametrize(
    "kwargs", [dict(), dict(norm_first=True, batch_first=True), dict(activation="gelu")]
)
def test_transformer_matches_torch(kwargs):
    size = dict(d_model=E, nhead=HEADS, num_encoder_layers=2, num_decoder_layers=2)
    size.update(dim_feedforward=FF, dropout=0.0)
    ours, theirs = _pair("Transformer", **size, **kwargs)
    rng = np.random.default_rng(3)
    n, s, t = 2, 4, 3
    bf = kwargs.get("batch_first", False)
    fsrc, tsrc = _inputs(rng, (n, s, E) if bf else (s, n, E))
    ftgt, ttgt = _inputs(rng, (n, t, E) if bf else (t, n, E))
    f_mask = nn.Transformer.generate_square_subsequent_mask(t, dtype=flow.float64)
    t_mask = torch.nn.Transformer.generate_square_subsequent_mask(t, dtype=torch.float64)
    _close(f_mask, t_mask)
    f_kpm, t_kpm = _key_padding(n, s, "float")
    memory_mask = rng.standard_normal((t, s))
    f_out = ours(
        fsrc,
        ftgt,
        tgt_mask=f_mask,
        memory_mask=flow.tensor(memory_mask),
        src_key_padding_mask=f_kpm,
        memory_key_padding_mask=f_kpm,
        tgt_is_causal=True,
    )
    t_out = theirs(
        tsrc,
        ttgt,
        tgt_mask=t_mask,
        memory_mask=torch.tensor(memory_mask),
        src_key_padding_mask=t_kpm,
        memory_key_padding_mask=t_kpm,
        tgt_is_causal=True,
    )
    _close(f_out, t_out)
    _backward(f_out, t_out, rng.standard_normal(tuple(t_out.shape)))
    _close(fsrc.grad, tsrc.grad)
    _close(ftgt.grad, ttgt.grad)
    _check_grads(ours, theirs)


def test_decoder_layer_unbatched_and_float32():
    ours, theirs = _pair("TransformerDecoderLayer", E, HEADS, FF, dropout=0.0)
    rng = np.random.default_rng(4)
    tgt, mem = rng.standard_normal((3, E)), rng.standard_normal((5, E))
    _close(ours(flow.tensor(tgt), flow.tensor(mem)), theirs(torch.tensor(tgt), torch.tensor(mem)))
    ours.float()
    theirs.float()
    tgt, mem = tgt.astype(np.float32), mem.astype(np.float32)
    np.testing.assert_allclose(
        ours(flow.tensor(tgt), flow.tensor(mem)).numpy(),
        theirs(torch.tensor(tgt), torch.tensor(mem)).detach().numpy(),
        atol=1e-5,
    )


def test_surface_matches_torch():
    size = dict(d_model=E, nhead=HEADS, num_encoder_layers=1, num_decoder_layers=1)
    ours, theirs = _pair("Transformer", **size, dim_feedforward=FF, bias=False)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours, theirs = _pair("Transformer", **size, dim_feedforward=FF)
    assert [(k, type(m).__name__) for k, m in ours.named_modules()] == [
        (k, type(m).__name__) for k, m in theirs.named_modules()
    ]
    for p in ours.parameters():
        if p.dim() > 1:  # xavier_uniform bound
            fan_out, fan_in = p.shape[0], p.shape[1]
            assert np.abs(p.detach().numpy()).max() <= np.sqrt(6.0 / (fan_in + fan_out))
    layer = nn.TransformerEncoderLayer(E, HEADS)
    assert layer.activation_relu_or_gelu == 1 and layer.linear1.out_features == 2048
    stack = nn.TransformerEncoder(layer, 3)
    assert len(stack.layers) == 3 and stack.layers[0].linear1.weight is not layer.linear1.weight


def test_dropout_is_active_only_in_training():
    layer = nn.TransformerEncoderLayer(E, HEADS, FF, dropout=0.5).double()
    x = flow.tensor(np.random.default_rng(5).standard_normal((3, 2, E)))
    layer.eval()
    np.testing.assert_array_equal(layer(x).numpy(), layer(x).numpy())
    layer.train()
    flow.manual_seed(0)
    assert not np.allclose(layer(x).numpy(), layer(x).numpy())


def test_errors():
    model = nn.Transformer(E, HEADS, 1, 1, FF)
    with pytest.raises(RuntimeError, match="batch number of src and tgt must be equal"):
        model(flow.zeros(3, 2, E), flow.zeros(3, 1, E))
    with pytest.raises(RuntimeError, match="feature number of src and tgt"):
        model(flow.zeros(3, 2, E), flow.zeros(3, 2, E + 1))
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(E, HEADS, activation="tanh")
    with pytest.raises(RuntimeError, match="2D attn_mask"):
        nn.MultiheadAttention(E, HEADS)(*(flow.zeros(3, 2, E),) * 3, attn_mask=flow.zeros(2, 2))
    with pytest.raises(TypeError, match="only bool and floating types of masks"):
        x = flow.zeros(3, 2, E)
        nn.MultiheadAttention(E, HEADS)(
            x, x, x, key_padding_mask=flow.zeros(2, 3, dtype=flow.int64)
        )
    with pytest.raises(RuntimeError, match="key's sequence and batch dims do not match"):
        mha = nn.MultiheadAttention(E, HEADS)
        mha(flow.zeros(3, 2, E), flow.zeros(4, 2, E), flow.zeros(5, 2, E))
    with pytest.raises(RuntimeError, match="expecting embedding dimension of 4"):
        mha(*(flow.zeros(3, 2, E + 1),) * 3)
    with pytest.raises(ValueError, match="divisible by num_heads"):
        nn.MultiheadAttention(5, 2)
