"""Every torch.nn loss (module and functional) against PyTorch: forward and input gradients in
float64 for each reduction, class weights, ignore_index, label smoothing, K-dim inputs, CTC,
legacy size_average/reduce, reprs, a float32 spot check and errors that name the shapes."""

import warnings

import numpy as np
import pytest
import torch

import oneflowlike as flow
from oneflowlike import nn
from oneflowlike.nn import functional as F

RNG = np.random.default_rng(0)
REDUCTIONS = ["none", "mean", "sum"]


class G:
    """An input that requires grad (its gradient is compared)."""

    def __init__(self, array):
        self.array = np.asarray(array, dtype=np.float64)


def _convert(value, lib):
    if isinstance(value, G):
        return lib.tensor(value.array, requires_grad=True)
    if isinstance(value, np.ndarray):
        return lib.tensor(value)
    return value


def check(out, ref, tol=1e-10):
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=tol, atol=tol)


def compare(ours, theirs, inputs, kwargs=None, tol=1e-10):
    kwargs = kwargs or {}
    ins_f = [_convert(v, flow) for v in inputs]
    ins_t = [_convert(v, torch) for v in inputs]
    kw_f = {k: _convert(v, flow) for k, v in kwargs.items()}
    kw_t = {k: _convert(v, torch) for k, v in kwargs.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out, ref = ours(*ins_f, **kw_f), theirs(*ins_t, **kw_t)
    check(out, ref, tol)
    grad = RNG.standard_normal(tuple(ref.shape))
    out.backward(flow.tensor(grad))
    ref.backward(torch.tensor(grad))
    for value, a, b in zip(inputs, ins_f, ins_t):
        if isinstance(value, G):
            check(a.grad, b.grad, tol)


N, C = 4, 5
X, Y = RNG.standard_normal((N, C)), RNG.standard_normal((N, C))
W = RNG.uniform(0.2, 2.0, C)
PROB = RNG.uniform(0.05, 0.95, (N, C))
BIN = (RNG.uniform(size=(N, C)) > 0.5).astype(np.float64)
SOFT = RNG.uniform(0, 1, (N, C))
CLS = RNG.integers(0, C, N)
CLS_IGN = np.array([1, -100, 3, 1])
SIGNS = np.where(RNG.uniform(size=N) > 0.5, 1.0, -1.0)
SIGNS_NC = np.where(RNG.uniform(size=(N, C)) > 0.5, 1.0, -1.0)
X3 = RNG.standard_normal((2, C, 3))
CLS3 = np.array([[0, 4, 2], [1, 2, -100]])
P3 = RNG.uniform(0.1, 1, (2, C, 3))
P3 /= P3.sum(1, keepdims=True)
LOGP = np.log(PROB / PROB.sum(1, keepdims=True))
Q = SOFT / SOFT.sum(1, keepdims=True)
MULTILABEL = np.array([[3, 0, -1, 1, 2], [1, 2, 4, 0, 3], [-1, 0, 0, 0, 0], [2, 2, -1, 3, 3]])
A, P, NEG = (RNG.standard_normal((N, 6)) for _ in range(3))

# (function name, inputs, keyword arguments): each runs with every reduction.
CASES = [
    ("l1_loss", [G(X), G(Y)], {}),
    ("l1_loss", [G(X), G(Y)], {"weight": SOFT}),
    ("mse_loss", [G(X), G(Y)], {}),
    ("mse_loss", [G(X), Y], {"weight": SOFT}),
    ("huber_loss", [G(2 * X), G(Y)], {"delta": 0.7}),
    ("huber_loss", [G(2 * X), Y], {"weight": SOFT}),
    ("smooth_l1_loss", [G(2 * X), G(Y)], {"beta": 0.5}),
    ("smooth_l1_loss", [G(X), Y], {"beta": 0.0}),
    ("soft_margin_loss", [G(X), SIGNS_NC], {}),
    ("binary_cross_entropy", [G(PROB), SOFT], {}),
    ("binary_cross_entropy", [G(PROB), G(BIN)], {"weight": W}),
    ("binary_cross_entropy_with_logits", [G(3 * X), G(SOFT)], {}),
    ("binary_cross_entropy_with_logits", [G(X), BIN], {"weight": W, "pos_weight": W[::-1].copy()}),
    ("kl_div", [G(LOGP), G(Q)], {}),
    ("kl_div", [G(LOGP), G(np.log(Q))], {"log_target": True}),
    ("poisson_nll_loss", [G(X), np.floor(3 * SOFT)], {}),
    ("poisson_nll_loss", [G(PROB), np.floor(4 * SOFT)], {"log_input": False, "full": True}),
    ("gaussian_nll_loss", [G(X), G(Y), G(PROB)], {}),
    ("gaussian_nll_loss", [G(X), Y, G(PROB[:, 0])], {"full": True}),
    ("gaussian_nll_loss", [G(X), Y, G(PROB[:, :1])], {"eps": 0.3}),
    ("nll_loss", [G(LOGP), CLS], {}),
    ("nll_loss", [G(LOGP), CLS_IGN], {"weight": W}),
    ("nll_loss", [G(X3), np.abs(CLS3) % C], {"weight": W, "ignore_index": 4}),
    ("nll_loss", [G(LOGP[0]), np.array(3)], {"weight": W}),
    ("cross_entropy", [G(X), CLS_IGN], {"label_smoothing": 0.2}),
    ("cross_entropy", [G(X), CLS_IGN], {"weight": W}),
    ("cross_entropy", [G(X), CLS], {"weight": W, "label_smoothing": 0.3, "ignore_index": 1}),
    ("cross_entropy", [G(X3), CLS3], {"weight": W, "label_smoothing": 0.1}),
    ("cross_entropy", [G(X3), G(P3)], {"weight": W, "label_smoothing": 0.25}),
    ("cross_entropy", [G(X3), G(P3)], {"label_smoothing": 0.25}),
    ("cross_entropy", [G(X[0]), np.array(2)], {"weight": W, "label_smoothing": 0.1}),
    ("multilabel_soft_margin_loss", [G(X), SOFT], {"weight": W}),
    ("multilabel_margin_loss", [G(X), MULTILABEL], {}),
    ("multilabel_margin_loss", [G(X[1]), MULTILABEL[0]], {}),
    ("multi_margin_loss", [G(X), CLS], {}),
    ("multi_margin_loss", [G(X[0]), np.array([2])], {"margin": 2.0}),
    ("multilabel_margin_loss", [G(np.array(0.7)), np.array(0)], {}),
    ("multi_margin_loss", [G(X), CLS], {"p": 2, "margin": 0.7, "weight": W}),
    ("cosine_embedding_loss", [G(X), G(Y), SIGNS], {"margin": 0.2}),
    ("cosine_embedding_loss", [G(X[0]), G(Y[0]), np.array(-1.0)], {"margin": -0.5}),
    ("margin_ranking_loss", [G(X[:, 0]), G(Y[:, 0]), SIGNS], {"margin": 0.1}),
    ("hinge_embedding_loss", [G(X), SIGNS_NC], {"margin": 0.5}),
    ("triplet_margin_loss", [G(A), G(P), G(NEG)], {"margin": 2.0}),
    ("triplet_margin_loss", [G(A), G(P), G(NEG)], {"p": 1.5, "swap": True, "eps": 1e-3}),
    ("triplet_margin_loss", [G(A[0]), G(P[0]), G(NEG[0])], {"p": 1}),
    ("triplet_margin_with_distance_loss", [G(A), G(P), G(NEG)], {"swap": True, "margin": 3}),
]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    "name,inputs,kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_functional_matches_torch(name, inputs, kwargs, reduction):
    compare(
        getattr(F, name),
        getattr(torch.nn.functional, name),
        inputs,
        dict(kwargs, reduction=reduction),
    )


def test_kl_div_batchmean_and_custom_distance():
    compare(F.kl_div, torch.nn.functional.kl_div, [G(LOGP), G(Q)], {"reduction": "batchmean"})

    def squared(u, v):
        return ((u - v) ** 2).sum(-1)

    compare(
        F.triplet_margin_with_distance_loss,
        torch.nn.functional.triplet_margin_with_distance_loss,
        [G(A), G(P), G(NEG)],
        {"distance_function": squared, "margin": 4.0},
    )


@pytest.mark.parametrize(
    "size_average,reduce", [(False, None), (None, False), (True, True), (False, True)]
)
def test_legacy_size_average_and_reduce(size_average, reduce):
    for name in ["mse_loss", "l1_loss", "binary_cross_entropy"]:
        ins = [G(PROB), SOFT]
        kw = {"size_average": size_average, "reduce": reduce}
        compare(getattr(F, name), getattr(torch.nn.functional, name), ins, kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = nn.CrossEntropyLoss(size_average=size_average, reduce=reduce)
        theirs = torch.nn.CrossEntropyLoss(size_average=size_average, reduce=reduce)
    assert ours.reduction == theirs.reduction


# (module name, constructor keyword arguments, forward inputs)
MODULES = [
    ("L1Loss", {}, [G(X), G(Y)]),
    ("MSELoss", {"reduction": "sum"}, [G(X), G(Y)]),
    ("CrossEntropyLoss", {"weight": W, "label_smoothing": 0.1}, [G(X3), CLS3]),
    ("NLLLoss", {"weight": W, "ignore_index": 2, "reduction": "sum"}, [G(LOGP), CLS]),
    ("BCELoss", {"weight": W}, [G(PROB), SOFT]),
    ("BCEWithLogitsLoss", {"pos_weight": W}, [G(X), SOFT]),
    ("KLDivLoss", {"reduction": "batchmean", "log_target": True}, [G(LOGP), G(np.log(Q))]),
    ("HuberLoss", {"delta": 0.5}, [G(2 * X), G(Y)]),
    ("SmoothL1Loss", {"beta": 0.3, "reduction": "none"}, [G(X), G(Y)]),
    ("SoftMarginLoss", {}, [G(X), SIGNS_NC]),
    ("MultiLabelSoftMarginLoss", {"weight": W}, [G(X), BIN]),
    ("MultiLabelMarginLoss", {}, [G(X), MULTILABEL]),
    ("MultiMarginLoss", {"p": 2, "weight": W}, [G(X), CLS]),
    ("CosineEmbeddingLoss", {"margin": 0.1}, [G(X), G(Y), SIGNS]),
    ("MarginRankingLoss", {"margin": 0.2}, [G(X[:, 1]), G(Y[:, 1]), SIGNS]),
    ("HingeEmbeddingLoss", {"margin": 2.0}, [G(X), SIGNS_NC]),
    ("TripletMarginLoss", {"margin": 1.5, "swap": True}, [G(A), G(P), G(NEG)]),
    ("TripletMarginWithDistanceLoss", {"margin": 2.5}, [G(A), G(P), G(NEG)]),
    ("PoissonNLLLoss", {"full": True}, [G(X), np.floor(4 * SOFT)]),
    ("GaussianNLLLoss", {"full": True, "eps": 1e-3}, [G(X), G(Y), G(PROB)]),
]


@pytest.mark.parametrize("name,kwargs,inputs", MODULES, ids=[m[0] for m in MODULES])
def test_module_matches_torch(name, kwargs, inputs):
    ours = getattr(nn, name)(**{k: _convert(v, flow) for k, v in kwargs.items()})
    theirs = getattr(torch.nn, name)(**{k: _convert(v, torch) for k, v in kwargs.items()})
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    compare(ours, theirs, inputs)


def _ctc_case(batch_first_targets):
    steps, batch, classes = 9, 3, 5
    logits = G(RNG.standard_normal((steps, batch, classes)))
    lengths_in, lengths_tg = [9, 7, 6], [3, 0, 2]
    if batch_first_targets:
        targets = RNG.integers(1, classes, (batch, 4))
    else:
        targets = RNG.integers(1, classes, sum(lengths_tg))
    return logits, targets, np.array(lengths_in), np.array(lengths_tg)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("padded", [True, False])
def test_ctc_loss_gradient_through_log_softmax(reduction, padded):
    # torch's CTC gradient w.r.t. log_probs adds exp(log_probs), which only vanishes behind
    # log_softmax: compare gradients of the logits.
    logits, targets, lin, ltg = _ctc_case(padded)

    def run(lib, fn):
        return lambda x, *rest, **kw: fn(lib.log_softmax(x, 2), *rest, **kw)

    compare(
        run(flow, F.ctc_loss),
        run(torch, torch.nn.functional.ctc_loss),
        [logits, targets, lin, ltg],
        {"reduction": reduction, "blank": 0},
    )


def test_ctc_loss_unbatched_repeats_blank_and_zero_infinity():
    steps, classes = 8, 4
    logits = G(RNG.standard_normal((steps, classes)))
    targets = np.array([1, 1, 2])  # a repeat needs a blank between
    for lengths in [(8, 3), (3, 3)]:  # (3, 3) cannot fit 1 blank 1 2: infinite loss
        for zero_inf in [False, True]:
            ours, theirs = nn.CTCLoss(blank=3, zero_infinity=zero_inf), torch.nn.CTCLoss(3)
            theirs.zero_infinity = zero_inf
            run_f = lambda x, *r: ours(flow.log_softmax(x, 1), *r)  # noqa: E731
            run_t = lambda x, *r: theirs(torch.log_softmax(x, 1), *r)  # noqa: E731
            if lengths == (3, 3) and not zero_inf:
                out = run_f(flow.tensor(logits.array), flow.tensor(targets), 3, 3)
                assert np.isinf(out.numpy())
                continue
            compare(run_f, run_t, [logits, targets, np.array(lengths[0]), np.array(lengths[1])])


def test_linear_cross_entropy_module_matches_torch():
    torch.manual_seed(0)
    kw = {"bias": True, "out_features": (2,), "label_smoothing": 0.1}
    theirs = torch.nn.LinearCrossEntropyLoss(6, C, dtype=torch.float64, **kw)
    ours = nn.LinearCrossEntropyLoss(6, C, dtype=flow.float64, **kw)
    ours.load_state_dict(
        {k: flow.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    )
    assert list(ours.state_dict()) == ["linear.weight", "linear.bias"]
    assert repr(ours) == repr(theirs)
    target = RNG.integers(0, C, (N, 2))
    compare(ours, theirs, [G(A), target])
    for name, param in theirs.named_parameters():
        check(dict(ours.named_parameters())[name].grad, param.grad)


def test_float32_spot_check():
    x, w = X.astype(np.float32), W.astype(np.float32)
    out = F.cross_entropy(flow.tensor(x), flow.tensor(CLS), weight=flow.tensor(w))
    ref = torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(CLS), torch.tensor(w))
    assert out.dtype == flow.float32
    check(out, ref, 1e-6)
    logp = np.log(PROB).astype(np.float32)
    out = F.binary_cross_entropy(flow.tensor(PROB.astype(np.float32)), flow.tensor(BIN))
    check(
        out, torch.nn.functional.binary_cross_entropy(torch.tensor(PROB), torch.tensor(BIN)), 1e-6
    )
    assert F.kl_div(flow.tensor(logp), flow.tensor(logp), reduction="sum").dtype == flow.float32


def test_broadcast_target_warns_like_torch():
    with pytest.warns(UserWarning, match="target size"):
        F.mse_loss(flow.tensor(X), flow.tensor(Y[:, :1]))
    compare(F.mse_loss, torch.nn.functional.mse_loss, [G(X), G(Y[:, :1])])


def test_class_targets_of_shape_n_by_1_are_read_as_oneflow_reads_them():
    """OneFlow's tutorials pass class targets (N, 1) for logits (N, C); PyTorch's (N,). Both
    mean the same classes, weighted or not, through the functions and the modules."""
    logits = RNG.standard_normal((5, 4))
    classes = np.array([0, 3, 1, 1, 2])
    for weight in (None, flow.tensor([1.0, 2.0, 0.5, 1.5], dtype=flow.float64)):
        for loss in (F.cross_entropy, nn.CrossEntropyLoss(weight=weight)):
            x = flow.tensor(logits)
            kwargs = {"weight": weight} if loss is F.cross_entropy else {}
            want = loss(x, flow.tensor(classes), **kwargs)
            got = loss(x, flow.tensor(classes.reshape(5, 1)), **kwargs)
            np.testing.assert_allclose(got.numpy(), want.numpy())
        logp = F.log_softmax(flow.tensor(logits), 1)
        np.testing.assert_allclose(
            F.nll_loss(logp, flow.tensor(classes.reshape(5, 1)), weight=weight).numpy(),
            F.nll_loss(logp, flow.tensor(classes), weight=weight).numpy(),
        )
    # Not a class target: (N, 2), and float (N, 1) with one class (probabilities), as before.
    with pytest.raises(RuntimeError, match=r"target of shape \(5, 2\)"):
        F.cross_entropy(flow.tensor(logits), flow.zeros(5, 2, dtype=flow.int64))
    one = flow.tensor(RNG.standard_normal((5, 1)))
    assert F.cross_entropy(one, flow.ones(5, 1, dtype=flow.float64)).item() == 0.0


def test_errors_name_the_loss_and_shapes():
    a, b = flow.ones(3, 4, dtype=flow.float64), flow.ones(3, 5, dtype=flow.float64)
    with pytest.raises(RuntimeError, match=r"\[l1_loss\].*\(3, 4\).*\(3, 5\)"):
        F.l1_loss(a, b)
    with pytest.raises(ValueError, match=r"\[binary_cross_entropy\].*\(3, 5\).*\(3, 4\)"):
        F.binary_cross_entropy(a * 0.5, b)
    with pytest.raises(ValueError, match=r"binary_cross_entropy_with_logits.*\(3, 5\).*\(3, 4\)"):
        nn.BCEWithLogitsLoss()(a, b)
    with pytest.raises(RuntimeError, match=r"cross_entropy.*all 4 classes.*\(3,\)"):
        F.cross_entropy(a, flow.tensor([0, 1, 2]), weight=flow.ones(3))
    with pytest.raises(RuntimeError, match=r"nll_loss.*\(2, 4, 5\).*\(2, 5\).*\(2, 4\)"):
        F.nll_loss(flow.ones(2, 4, 5), flow.zeros(2, 4, dtype=flow.int64), weight=flow.ones(4))
    with pytest.raises(RuntimeError, match=r"cross_entropy.*\(3, 5\).*\(3, 4\)"):
        F.cross_entropy(a, b, weight=flow.ones(4, dtype=flow.float64))
    with pytest.raises(RuntimeError, match=r"multilabel_margin_loss.*\(3, 5\).*\(3, 4\)"):
        F.multilabel_margin_loss(a, flow.zeros(3, 5, dtype=flow.int64))
    with pytest.raises(RuntimeError, match=r"margin_ranking_loss.*\(3, 4\).*\(3,\)"):
        F.margin_ranking_loss(a, a, flow.ones(3))
    with pytest.raises(RuntimeError, match=r"triplet_margin_loss.*\(3, 4\).*\(4,\)"):
        F.triplet_margin_loss(a, a, flow.ones(4))
    with pytest.raises(ValueError, match="only p == 1 and p == 2"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match="margin to be greater than 0"):
        nn.TripletMarginLoss(margin=0)
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(a, a, flow.ones(2, dtype=flow.float64))
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(a, a, -1.0)
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.smooth_l1_loss(a, a, reduction="avg")
    with pytest.raises(RuntimeError, match=r"ctc_loss.*at most 9"):
        logp = flow.zeros(9, 2, 5)
        F.ctc_loss(logp, flow.ones(2, 3, dtype=flow.int64), [9, 10], [3, 3])
