"""nn.RNN / LSTM / GRU, their cells and nn.utils.rnn against PyTorch (float64, weights copied)."""

import numpy as np
import pytest
import torch

import oneflowlike as flow
import oneflowlike.nn as nn
from oneflowlike.nn.utils import rnn as frnn
from torch.nn.utils import rnn as trnn

I, H = 3, 4


def _f(t, grad=False):
    return flow.tensor(t.detach().numpy(), requires_grad=grad)


def _t(a, grad=False):
    return torch.tensor(np.asarray(a), requires_grad=grad)


def _close(ours, theirs, tol=1e-10):
    theirs = theirs.detach().numpy()
    assert tuple(ours.shape) == theirs.shape
    np.testing.assert_allclose(ours.numpy(), theirs, rtol=tol, atol=tol)


def _pair(cls, *args, **kwargs):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, cls)(*args, **kwargs).double()
    ours = getattr(nn, cls)(*args, **kwargs).double()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: _f(v) for k, v in theirs.state_dict().items()})
    return ours, theirs


def _states(out):
    return tuple(out) if isinstance(out, tuple) else (out,)


def _check_grads(ours, theirs):
    mine = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        assert mine[name].grad is not None, name
        _close(mine[name].grad, p.grad)


def _loss(out, states):
    """A loss that weighs every output and final state differently, so each gradient path counts."""
    total = (out * out).sum() * 0.5
    for k, s in enumerate(states):
        total = total + (s * (k + 2.0)).sum() + (s * s).sum()
    return total


CONFIGS = [
    ("RNN", dict()),
    ("RNN", dict(nonlinearity="relu", num_layers=2, bias=False)),
    ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict(proj_size=2, batch_first=True, bidirectional=True, num_layers=2)),
    ("GRU", dict(num_layers=2, batch_first=True)),
    ("GRU", dict(bidirectional=True, bias=False)),
]


@pytest.mark.parametrize("cls,kwargs", CONFIGS)
@pytest.mark.parametrize("with_hx", [False, True])
def test_recurrent_matches_torch(cls, kwargs, with_hx):
    ours, theirs = _pair(cls, I, H, **kwargs)
    rng = np.random.default_rng(1)
    shape = (2, 5, I) if kwargs.get("batch_first") else (5, 2, I)
    x = rng.standard_normal(shape)
    tx, fx = _t(x, True), flow.tensor(x, requires_grad=True)
    t_args, f_args = [tx], [fx]
    if with_hx:
        layers = theirs.num_layers * (2 if theirs.bidirectional else 1)
        sizes = [kwargs.get("proj_size") or H] + ([H] if cls == "LSTM" else [])
        hs = [rng.standard_normal((layers, 2, s)) for s in sizes]
        th = tuple(_t(h, True) for h in hs)
        fh = tuple(flow.tensor(h, requires_grad=True) for h in hs)
        t_args.append(th if cls == "LSTM" else th[0])
        f_args.append(fh if cls == "LSTM" else fh[0])
    t_out, t_state = theirs(*t_args)
    f_out, f_state = ours(*f_args)
    _close(f_out, t_out)
    for a, b in zip(_states(f_state), _states(t_state)):
        _close(a, b)
    _loss(t_out, _states(t_state)).backward()
    _loss(f_out, _states(f_state)).backward()
    _close(fx.grad, tx.grad)
    if with_hx:
        for a, b in zip(fh, th):
            _close(a.grad, b.grad)
    _check_grads(ours, theirs)


@pytest.mark.parametrize("cls,kwargs", [CONFIGS[1], CONFIGS[3], CONFIGS[5]])
def test_packed_sequences_match_torch(cls, kwargs):
    ours, theirs = _pair(cls, I, H, **kwargs)
    rng = np.random.default_rng(2)
    lengths = [3, 5, 1, 5]  # unsorted, with a tie
    x = rng.standard_normal((5, 4, I))
    tx, fx = _t(x, True), flow.tensor(x, requires_grad=True)
    layers = theirs.num_layers * (2 if theirs.bidirectional else 1)
    sizes = [kwargs.get("proj_size") or H] + ([H] if cls == "LSTM" else [])
    hs = [rng.standard_normal((layers, 4, s)) for s in sizes]
    th, fh = tuple(_t(h, True) for h in hs), tuple(flow.tensor(h, requires_grad=True) for h in hs)
    tp = trnn.pack_padded_sequence(tx, lengths, enforce_sorted=False)
    fp = frnn.pack_padded_sequence(fx, lengths, enforce_sorted=False)
    assert fp.batch_sizes.tolist() == tp.batch_sizes.tolist()
    assert fp.sorted_indices.tolist() == tp.sorted_indices.tolist()
    t_out, t_state = theirs(tp, th if cls == "LSTM" else th[0])
    f_out, f_state = ours(fp, fh if cls == "LSTM" else fh[0])
    assert isinstance(f_out, frnn.PackedSequence)
    _close(f_out.data, t_out.data)
    t_pad, t_len = trnn.pad_packed_sequence(t_out, batch_first=True, total_length=6)
    f_pad, f_len = frnn.pad_packed_sequence(f_out, batch_first=True, total_length=6)
    assert f_len.tolist() == t_len.tolist() == lengths
    _close(f_pad, t_pad)
    for a, b in zip(_states(f_state), _states(t_state)):
        _close(a, b)
    _loss(t_pad, _states(t_state)).backward()
    _loss(f_pad, _states(f_state)).backward()
    _close(fx.grad, tx.grad)
    for a, b in zip(fh, th):
        _close(a.grad, b.grad)
    _check_grads(ours, theirs)


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_unbatched_input_and_float32(cls):
    ours, theirs = _pair(cls, I, H, num_layers=2, bidirectional=True)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, I))
    hs = [rng.standard_normal((4, H)) for _ in range(2 if cls == "LSTM" else 1)]
    th, fh = tuple(_t(h) for h in hs), tuple(flow.tensor(h) for h in hs)
    t_out, t_state = theirs(_t(x), th if cls == "LSTM" else th[0])
    f_out, f_state = ours(flow.tensor(x), fh if cls == "LSTM" else fh[0])
    _close(f_out, t_out)
    for a, b in zip(_states(f_state), _states(t_state)):
        _close(a, b)
    ours.float()
    theirs.float()
    x32 = x.astype(np.float32)
    np.testing.assert_allclose(
        ours(flow.tensor(x32))[0].numpy(), theirs(_t(x32))[0].detach().numpy(), atol=1e-5
    )


@pytest.mark.parametrize(
    "cls,kwargs",
    [("RNNCell", dict()), ("RNNCell", dict(nonlinearity="relu", bias=False))]
    + [("LSTMCell", dict()), ("GRUCell", dict()), ("GRUCell", dict(bias=False))],
)
@pytest.mark.parametrize("batched", [True, False])
def test_cells_match_torch(cls, kwargs, batched):
    ours, theirs = _pair(cls, I, H, **kwargs)
    rng = np.random.default_rng(4)
    lead = (3,) if batched else ()
    x = rng.standard_normal(lead + (I,))
    hs = [rng.standard_normal(lead + (H,)) for _ in range(2 if cls == "LSTMCell" else 1)]
    tx, fx = _t(x, True), flow.tensor(x, requires_grad=True)
    th = tuple(_t(h, True) for h in hs)
    fh = tuple(flow.tensor(h, requires_grad=True) for h in hs)
    t_out = _states(theirs(tx, th if cls == "LSTMCell" else th[0]))
    f_out = _states(ours(fx, fh if cls == "LSTMCell" else fh[0]))
    for a, b in zip(f_out, t_out):
        _close(a, b)
    _loss(t_out[0], t_out[1:]).backward()
    _loss(f_out[0], f_out[1:]).backward()
    _close(fx.grad, tx.grad)
    for a, b in zip(fh, th):
        _close(a.grad, b.grad)
    _check_grads(ours, theirs)
    # no hidden state: zeros, as torch
    for a, b in zip(_states(ours(fx)), _states(theirs(tx))):
        _close(a, b)


def test_module_surface_matches_torch():
    for cls, kwargs in CONFIGS + [("RNNCell", dict(nonlinearity="relu")), ("LSTMCell", {})]:
        ours, theirs = _pair(cls, I, H, **kwargs)
        assert repr(ours) == repr(theirs)
        assert [tuple(p.shape) for p in ours.parameters()] == [
            tuple(p.shape) for p in theirs.parameters()
        ]
        if hasattr(theirs, "all_weights"):
            assert [[tuple(w.shape) for w in ws] for ws in ours.all_weights] == [
                [tuple(w.shape) for w in ws] for ws in theirs.all_weights
            ]
            ours.flatten_parameters()
    bound = 1 / np.sqrt(7)
    for p in nn.LSTM(5, 7, num_layers=2, proj_size=3).parameters():
        values = p.detach().numpy()
        assert values.min() >= -bound and values.max() <= bound and values.std() > 0


def test_dropout_between_layers():
    ours, theirs = _pair("GRU", I, H, num_layers=2, dropout=0.5)
    x = np.random.default_rng(5).standard_normal((4, 2, I))
    ours.eval()
    theirs.eval()
    _close(ours(flow.tensor(x))[0], theirs(_t(x))[0])
    ours.train()
    flow.manual_seed(0)
    a = ours(flow.tensor(x))[0].numpy()
    assert not np.allclose(a, theirs(_t(x))[0].detach().numpy())
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        nn.LSTM(I, H, dropout=0.3)


def test_errors():
    lstm = nn.LSTM(I, H).double()
    with pytest.raises(RuntimeError, match="input_size. Expected 3, got 5"):
        lstm(flow.zeros(4, 2, 5, dtype=flow.float64))
    with pytest.raises(RuntimeError, match=r"hidden\[0\] size \(1, 2, 4\), got \[1, 3, 4\]"):
        h = flow.zeros(1, 3, H, dtype=flow.float64)
        lstm(flow.zeros(4, 2, I, dtype=flow.float64), (h, h))
    with pytest.raises(ValueError, match="Expected input to be 2D or 3D"):
        lstm(flow.zeros(4, dtype=flow.float64))
    with pytest.raises(RuntimeError, match="sequence length to be larger than 0"):
        lstm(flow.zeros(0, 2, I, dtype=flow.float64))
    with pytest.raises(ValueError, match="does not match weight dtype"):
        lstm(flow.zeros(4, 2, I))
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        nn.GRU(I, H, proj_size=2)
    with pytest.raises(ValueError, match="proj_size has to be smaller"):
        nn.LSTM(I, H, proj_size=H)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'gelu'"):
        nn.RNN(I, H, nonlinearity="gelu")
    with pytest.raises(ValueError, match="dropout should be a number"):
        nn.RNN(I, H, dropout=1.5)
    with pytest.raises(RuntimeError, match="GRUCell: hidden has shape"):
        nn.GRUCell(I, H)(flow.zeros(2, I), flow.zeros(3, H))


def test_utils_rnn_matches_torch():
    rng = np.random.default_rng(6)
    seqs = [rng.standard_normal((n, 2)) for n in (2, 4, 1)]
    for side in ("left", "right"):
        for batch_first in (False, True):
            _close(
                frnn.pad_sequence([flow.tensor(s) for s in seqs], batch_first, 1.5, side),
                trnn.pad_sequence([_t(s) for s in seqs], batch_first, 1.5, side),
            )
    fs = [flow.tensor(s, requires_grad=True) for s in seqs]
    ts = [_t(s, True) for s in seqs]
    fp = frnn.pack_sequence(fs, enforce_sorted=False)
    tp = trnn.pack_sequence(ts, enforce_sorted=False)
    _close(fp.data, tp.data)
    assert fp.unsorted_indices.tolist() == tp.unsorted_indices.tolist()
    unpacked = frnn.unpack_sequence(fp)
    for a, b in zip(unpacked, trnn.unpack_sequence(tp)):
        _close(a, b)
    sum((u * u).sum() for u in unpacked).backward()
    for a, b in zip(fs, seqs):
        np.testing.assert_allclose(a.grad.numpy(), 2 * b)
    padded = rng.standard_normal((3, 4, 2))
    for a, b in zip(
        frnn.unpad_sequence(flow.tensor(padded), flow.tensor([3, 1, 2, 3])),
        trnn.unpad_sequence(_t(padded), torch.tensor([3, 1, 2, 3])),
    ):
        _close(a, b)
    perm = torch.tensor([2, 0, 3, 1])
    assert frnn.invert_permutation(flow.tensor([2, 0, 3, 1])).tolist() == (
        trnn.invert_permutation(perm).tolist()
    )
    sorted_pack = frnn.pack_padded_sequence(flow.tensor(padded), [4, 3, 1], batch_first=True)
    assert sorted_pack.sorted_indices is None and sorted_pack.batch_sizes.tolist() == [3, 2, 2, 1]
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        frnn.pack_padded_sequence(flow.tensor(padded), [1, 3, 4], batch_first=True)
    with pytest.raises(RuntimeError, match="greater than 0"):
        frnn.pack_padded_sequence(flow.tensor(padded), [4, 3, 0], batch_first=True)
    with pytest.raises(ValueError, match="total_length=2"):
        frnn.pad_packed_sequence(sorted_pack, total_length=2)


def test_meta_device_and_graph():
    lstm = nn.LSTM(I, H, num_layers=2, bidirectional=True, proj_size=2, device="meta")
    out, (h, c) = lstm(flow.empty(5, 2, I, device="meta"))
    assert out.device.type == "meta" and tuple(out.shape) == (5, 2, 4)
    assert tuple(h.shape) == (4, 2, 2) and tuple(c.shape) == (4, 2, H)

    gru = nn.GRU(I, H, bidirectional=True, batch_first=True)

    class Step(nn.Graph):
        def __init__(self):
            super().__init__()
            self.gru = gru

        def build(self, x):
            out, h = self.gru(x)
            return out, h

    x = flow.randn(2, 5, I)
    for a, b in zip(Step()(x), gru(x)):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), atol=1e-6)


@pytest.mark.parametrize("packed", [False, True])
def test_long_sequences_cut_through_the_block_tree(packed):
    # more than 8 steps: the per-step pieces are cut through nested blocks
    ours, theirs = _pair("LSTM", 2, 3, bidirectional=True)
    x = np.random.default_rng(7).standard_normal((19, 2, 2))
    tx, fx = _t(x, True), flow.tensor(x, requires_grad=True)
    if packed:
        t_in = trnn.pack_padded_sequence(tx, [19, 11])
        f_in = frnn.pack_padded_sequence(fx, [19, 11])
    else:
        t_in, f_in = tx, fx
    (t_out, t_state), (f_out, f_state) = theirs(t_in), ours(f_in)
    if packed:
        t_out, f_out = t_out.data, f_out.data
    _close(f_out, t_out)
    _loss(t_out, t_state).backward()
    _loss(f_out, f_state).backward()
    _close(fx.grad, tx.grad)
    _check_grads(ours, theirs)


# --- the fused LSTM and GRU layers (ops/rnn.cpp), which equal-length layers run as ---


@pytest.mark.parametrize("cls,kwargs", [("LSTM", {}), ("GRU", {}), ("GRU", {"bias": False})])
def test_fused_layers_differentiate_twice_like_torch(cls, kwargs):
    # create_graph: the backward runs as ops, so the gradient has a gradient of its own
    ours, theirs = _pair(cls, I, H, bidirectional=True, **kwargs)
    x = np.random.default_rng(2).standard_normal((5, 2, I))
    tx, fx = _t(x, True), flow.tensor(x, requires_grad=True)
    (t_g,) = torch.autograd.grad((theirs(tx)[0] ** 2).sum(), tx, create_graph=True)
    (f_g,) = flow.autograd.grad((ours(fx)[0] ** 2).sum(), fx, create_graph=True)
    _close(f_g, t_g)
    (t_g * t_g).sum().backward()
    (f_g * f_g).sum().backward()
    _close(fx.grad, tx.grad)
    _check_grads(ours, theirs)


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_fused_layers_gradient_from_the_final_state_alone(cls):
    # the output takes no gradient: the layer's backward gets none for it
    ours, theirs = _pair(cls, I, H, num_layers=2)
    x = np.random.default_rng(3).standard_normal((6, 3, I))
    tx, fx = _t(x, True), flow.tensor(x, requires_grad=True)
    for model, inp in ((theirs, tx), (ours, fx)):
        states = _states(model(inp)[1])
        (states[0][-1].sum() * 2 + (states[-1] * states[-1]).sum()).backward()
    _close(fx.grad, tx.grad)
    _check_grads(ours, theirs)


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_fused_layers_float32_at_width_match_torch(cls):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, cls)(24, 32, num_layers=2, batch_first=True)
    ours = getattr(nn, cls)(24, 32, num_layers=2, batch_first=True)
    ours.load_state_dict({k: _f(v) for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(4).standard_normal((5, 9, 24)).astype(np.float32)
    tx, fx = _t(x, True), flow.tensor(x, requires_grad=True)
    t_out, f_out = theirs(tx)[0], ours(fx)[0]
    _close(f_out, t_out, tol=2e-5)
    t_out.pow(2).sum().backward()
    f_out.pow(2).sum().backward()
    _close(fx.grad, tx.grad, tol=2e-4)
    mine = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        _close(mine[name].grad, p.grad, tol=2e-4)


def test_fused_lstm_layer_errors_name_the_shapes():
    x, s, w = flow.zeros(3, 2, 8), flow.zeros(2, 2), flow.zeros(8, 2)
    with pytest.raises(
        RuntimeError, match=r"_lstm_layer.*\(steps, batch, 4 \* hidden\).*\(3, 2, 7\)"
    ):
        flow._C._lstm_layer(flow.zeros(3, 2, 7), s, s, w)
    with pytest.raises(RuntimeError, match=r"_lstm_layer.*c0 is \(2, 3\) where the input"):
        flow._C._lstm_layer(x, s, flow.zeros(2, 3), w)
    with pytest.raises(RuntimeError, match=r"_lstm_layer.*weight_hh is \(2, 8\)"):
        flow._C._lstm_layer(x, s, s, flow.zeros(2, 8))
    with pytest.raises(TypeError, match=r"_lstm_layer.*float32 or float64"):
        flow._C._lstm_layer(x.int(), s.int(), s.int(), w.int())
    with pytest.raises(TypeError, match=r"_lstm_layer.*dtype float32"):
        flow._C._lstm_layer(x, s.double(), s, w)
    with pytest.raises(
        RuntimeError, match=r"_gru_layer.*\(steps, batch, 3 \* hidden\).*\(3, 2, 8\)"
    ):
        flow._C._gru_layer(x, s, flow.zeros(6, 2), flow.zeros(2))
    with pytest.raises(RuntimeError, match=r"_gru_layer.*b_hn is \(3,\) where the input"):
        flow._C._gru_layer(flow.zeros(3, 2, 6), s, flow.zeros(6, 2), flow.zeros(3))


def test_fused_lstm_on_meta_and_in_a_graph():
    lstm = nn.LSTM(I, H, num_layers=2, bidirectional=True, device="meta")
    out, (h, c) = lstm(flow.empty(5, 2, I, device="meta"))
    assert out.device.type == "meta" and tuple(out.shape) == (5, 2, 2 * H)
    assert tuple(h.shape) == (4, 2, H) and tuple(c.shape) == (4, 2, H)

    lstm = nn.LSTM(I, H, num_layers=2, bidirectional=True)

    class Step(nn.Graph):
        def __init__(self):
            super().__init__()
            self.lstm = lstm

        def build(self, x):
            out, (h, c) = self.lstm(x)
            return out, h, c

    x = flow.randn(5, 2, I)
    out, (h, c) = lstm(x)
    for a, b in zip(Step()(x), (out, h, c)):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), atol=1e-6)


def test_fused_layers_with_no_hidden_units_give_empty_results():
    # hidden 0 through the ops directly (the modules refuse it, as PyTorch's): no division by it
    x, s = flow.zeros(2, 1, 0, requires_grad=True), flow.zeros(1, 0)
    out = flow._C._lstm_layer(x, s, s, flow.zeros(0, 0))
    assert [tuple(t.shape) for t in out] == [(2, 1, 0), (1, 0), (1, 0), (2, 1, 0), (2, 1, 0)]
    out[0].sum().backward()
    assert tuple(x.grad.shape) == (2, 1, 0)
    out = flow._C._gru_layer(x, s, flow.zeros(0, 0), flow.zeros(0))
    assert [tuple(t.shape) for t in out] == [(2, 1, 0), (1, 0), (2, 1, 0)]
