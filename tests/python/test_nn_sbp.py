"""SBP rules of the fused ops (the norms' and attention's backwards, the LSTM layer and its
backward), whose signatures lay outputs out differently (the input's gradient split like the rows, the weights' or keys' partial sums). The conformance
checker lays every output out alike, so here each declared signature runs the op on every
rank's pieces, and each output's pieces must make the logical result under its own layout."""

import numpy as np
import pytest

import oneflowlike as flow
from oneflowlike import _C
from sbp_conformance import _f, _matches, _pieces

B = flow.sbp.broadcast
X3 = _f(3, 2, 4)


def _stats(*shape, seed):
    return _f(*shape, seed=seed), _f(*shape, positive=True, seed=seed + 1)


NORM = {"normalized_shape": [4]}
ATTENTION = {"scale": 0.5, "causal": False, "balance": 0}
QKV = [_f(2, 3, 4, 4, seed=4), _f(2, 3, 5, 4, seed=5), _f(2, 3, 5, 3, seed=6)]


def _attention_backward_inputs():
    out, lse = _C.dispatch("flash_attention", [flow.tensor(a) for a in QKV], ATTENTION)
    return [_f(2, 3, 4, 3, seed=7), *QKV, out.numpy(), lse.numpy()]


def _lstm_inputs(steps=3, batch=4, hidden=2):
    return [_f(steps, batch, 4 * hidden, seed=8), _f(batch, hidden, seed=9)]


def _lstm_backward_inputs():
    x, h0 = _lstm_inputs()
    c0, w = _f(4, 2, seed=10), _f(8, 2, seed=11)
    out, _, _, gates, cells = _C.dispatch(
        "_lstm_layer", [flow.tensor(a) for a in (x, h0, c0, w)], LSTM
    )
    grads = [_f(3, 4, 2, seed=12), _f(4, 2, seed=13), _f(4, 2, seed=14)]
    return [*grads, h0, c0, w, out.numpy(), gates.numpy(), cells.numpy()]


def _gru_backward_inputs():
    x, h0 = _f(3, 4, 6, seed=15), _f(4, 2, seed=16)
    w, b = _f(6, 2, seed=17), _f(2, seed=18)
    out, _, ws = _C.dispatch("_gru_layer", [flow.tensor(a) for a in (x, h0, w, b)], LSTM)
    return [_f(3, 4, 2, seed=19), _f(4, 2, seed=20), h0, w, out.numpy(), ws.numpy()]


def _partial_grads(num_in, num_grads, num_out):
    """The signature a backward linear in its first num_grads inputs declares."""
    return (("P(sum)",) * num_grads + ("B",) * (num_in - num_grads), ("P(sum)",) * num_out)


LSTM = {"reverse": True}
# name -> (input arrays, attributes, signatures that must be declared: the row split of the
# input (S(0) of x and grad; S(2) of the queries; the LSTM's batch) and, for the backwards,
# partial gradients in, partial gradients out)
CASES = {
    "layer_norm_backward": (
        [_f(3, 2, 4, seed=1), X3, _f(4, seed=2), *_stats(3, 2, seed=3)],
        NORM,
        [
            (("S(0)", "S(0)", "B", "S(0)", "S(0)"), ("S(0)", "P(sum)", "P(sum)")),
            _partial_grads(5, 1, 3),
        ],
    ),
    "rms_norm_backward": (
        [_f(3, 2, 4, seed=1), X3, _f(4, seed=2), _stats(3, 2, seed=3)[1]],
        NORM,
        [(("S(0)", "S(0)", "B", "S(0)"), ("S(0)", "P(sum)")), _partial_grads(4, 1, 2)],
    ),
    "flash_attention_backward": (
        _attention_backward_inputs(),
        ATTENTION,
        [
            (("S(2)", "S(2)", "B", "B", "S(2)", "S(2)"), ("S(2)", "P(sum)", "P(sum)")),
            _partial_grads(6, 1, 3),
        ],
    ),
    "_lstm_layer": (
        [*_lstm_inputs(), _f(4, 2, seed=10), _f(8, 2, seed=11)],
        LSTM,
        [(("S(1)", "S(0)", "S(0)", "B"), ("S(1)", "S(0)", "S(0)", "S(1)", "S(1)"))],
    ),
    "_gru_layer": (
        [_f(3, 4, 6, seed=15), _f(4, 2, seed=16), _f(6, 2, seed=17), _f(2, seed=18)],
        LSTM,
        [(("S(1)", "S(0)", "B", "B"), ("S(1)", "S(0)", "S(1)"))],
    ),
    "_gru_layer_backward": (
        _gru_backward_inputs(),
        LSTM,
        [
            (("S(1)", "S(0)", "S(0)", "B", "S(1)", "S(1)"), ("S(1)", "S(0)", "P(sum)", "P(sum)")),
            _partial_grads(6, 2, 4),
        ],
    ),
    "_lstm_layer_backward": (
        _lstm_backward_inputs(),
        LSTM,
        [
            (
                ("S(1)", "S(0)", "S(0)", "S(0)", "S(0)", "B", "S(1)", "S(1)", "S(1)"),
                ("S(1)", "S(0)", "S(0)", "P(sum)"),
            ),
            _partial_grads(9, 3, 4),
        ],
    ),
}


def _sig(sbps):
    return tuple(s.to_string() for s in sbps)


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("name", sorted(CASES))
def test_every_declared_signature_gives_every_logical_output(name, n):
    arrays, attrs, required = CASES[name]
    want = [o.numpy() for o in _C.dispatch(name, [flow.tensor(a) for a in arrays], attrs)]
    probe = [_C.sbp_simulated_global(flow.tensor(a), list(a.shape), B, 0, n) for a in arrays]
    op, declared = _C.sbp_declared(lambda: _C.dispatch(name, probe, attrs))
    assert op == name
    keys = {(_sig(i), _sig(o)) for i, o in declared}
    for signature in required:
        assert signature in keys, signature
    rng = np.random.default_rng(0)
    for ins, outs in declared:
        pieces = [_pieces(a, s, n, rng) for a, s in zip(arrays, ins)]
        per_rank = [_C.dispatch(name, [flow.tensor(p[r]) for p in pieces], attrs) for r in range(n)]
        for j, (w, s) in enumerate(zip(want, outs)):
            got = [np.array(o[j].numpy()) for o in per_rank]
            assert _matches(got, w, s), (_sig(ins), _sig(outs), j)
