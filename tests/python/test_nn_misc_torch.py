"""Containers, the linear family, distances, dropouts, Flatten / Unflatten, Embedding /
EmbeddingBag and the lazy modules against PyTorch (float64 forward and gradients, state_dict
keys, reprs, container behaviour); dropouts by their statistics and structure."""

from collections import OrderedDict

import numpy as np
import pytest
import torch

import oneflowlike as flow
import oneflowlike.nn as nn
import oneflowlike.nn.functional as F

pytestmark = pytest.mark.unit
torch.set_num_threads(1)  # tiny tensors: threads only add overhead
TF = torch.nn.functional
TOL = dict(rtol=1e-9, atol=1e-10)


def _rng(seed=0):
    return np.random.default_rng(seed)


def _pair(array, requires_grad=False):
    f, t = flow.tensor(array), torch.tensor(array)
    if requires_grad:
        f.requires_grad_(True), t.requires_grad_(True)
    return f, t


def _close(mine, theirs, **tol):
    theirs = theirs.detach().numpy() if isinstance(theirs, torch.Tensor) else theirs
    np.testing.assert_allclose(mine.numpy(), theirs, **(tol or TOL))


def _copy_state(module, tmodule):
    module.load_state_dict(
        {k: flow.tensor(v.detach().numpy()) for k, v in tmodule.state_dict().items()}
    )


def _check(module, tmodule, *arrays, grads=True, seed=3):
    """Same outputs and, for float inputs, the same input and parameter gradients."""
    pairs = [_pair(a, grads and a.dtype == np.float64) for a in arrays]
    y, ty = module(*[p[0] for p in pairs]), tmodule(*[p[1] for p in pairs])
    _close(y, ty)
    if not grads:
        return
    g = _rng(seed).standard_normal(tuple(ty.shape))
    y.backward(flow.tensor(g)), ty.backward(torch.tensor(g))
    for (f, t), a in zip(pairs, arrays):
        if a.dtype == np.float64:
            _close(f.grad, t.grad)
    params = dict(module.named_parameters())
    for name, tp in tmodule.named_parameters():
        if tp.grad is not None:
            _close(params[name].grad, tp.grad)


# ---- linear family, distances, flatten ------------------------------------------------------


@pytest.mark.parametrize("bias", [True, False])
def test_linear_family_matches_torch(bias):
    rng = _rng(1)
    for make, inputs in [
        (lambda m: m.Linear(3, 4, bias=bias), [rng.standard_normal((2, 5, 3))]),
        (
            lambda m: m.Bilinear(3, 2, 4, bias=bias),
            [rng.standard_normal((5, 3)), rng.standard_normal((5, 2))],
        ),
        (
            lambda m: m.Bilinear(2, 2, 3, bias=bias),
            [rng.standard_normal((2, 4, 2)), rng.standard_normal((2, 4, 2))],
        ),
    ]:
        module, tmodule = make(nn).double(), make(torch.nn).double()
        _copy_state(module, tmodule)
        _check(module, tmodule, *inputs)
        assert list(module.state_dict()) == list(tmodule.state_dict())
        assert repr(module) == repr(tmodule)
    assert repr(nn.Identity(3, k=1)) == repr(torch.nn.Identity(3, k=1))
    with pytest.raises(RuntimeError):
        F.bilinear(flow.zeros(2, 3), flow.zeros(2, 2), flow.zeros(4, 3, 3))


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("PairwiseDistance", dict()),
        ("PairwiseDistance", dict(p=1.0, keepdim=True)),
        ("PairwiseDistance", dict(p=3.0, eps=0.0)),
        ("PairwiseDistance", dict(p=float("inf"))),
        ("CosineSimilarity", dict()),
        ("CosineSimilarity", dict(dim=-1, eps=1e-6)),
    ],
    ids=str,
)
def test_distance_modules_match_torch(name, kwargs):
    rng = _rng(2)
    module, tmodule = getattr(nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs)
    _check(module, tmodule, rng.standard_normal((4, 5)), rng.standard_normal((4, 5)))
    _check(module, tmodule, rng.standard_normal((3, 4, 5)), rng.standard_normal((4, 5)))
    assert repr(module) == repr(tmodule)


@pytest.mark.parametrize("p", [2, 1, 0.5, 3, float("inf")])
def test_pdist_matches_torch(p):
    a = _rng(3).standard_normal((5, 3))
    a[3] = a[1]  # a zero distance: its gradient is zero, not nan
    x, tx = _pair(a, True)
    y, ty = F.pdist(x, p), TF.pdist(tx, p)
    _close(y, ty)
    if p >= 1:
        g = _rng(4).standard_normal(tuple(ty.shape))
        y.backward(flow.tensor(g)), ty.backward(torch.tensor(g))
        _close(x.grad, tx.grad)
    with pytest.raises(RuntimeError):
        F.pdist(flow.zeros(2, 3, 4))


def test_flatten_and_unflatten_match_torch():
    a = _rng(5).standard_normal((2, 3, 4, 5))
    for args in [(), (0, 2), (-3, -2), (2,)]:
        _check(nn.Flatten(*args), torch.nn.Flatten(*args), a)
        assert repr(nn.Flatten(*args)) == repr(torch.nn.Flatten(*args))
    for dim, size in [(1, (3, 1)), (-1, [5, 1]), (2, (2, -1))]:
        _check(nn.Unflatten(dim, size), torch.nn.Unflatten(dim, size), a)
        assert repr(nn.Unflatten(dim, size)) == repr(torch.nn.Unflatten(dim, size))
    with pytest.raises(TypeError):
        nn.Unflatten(1, (2, 1.5))


# ---- dropouts -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,shape,lead",
    [
        ("Dropout", (40, 50), 0),
        ("Dropout1d", (20, 40, 3), 2),
        ("Dropout1d", (400, 3), 1),
        ("Dropout2d", (20, 40, 2, 2), 2),
        ("Dropout3d", (20, 40, 2, 1, 2), 2),
        ("Dropout3d", (400, 2, 1, 2), 1),
    ],
)
def test_dropouts_zero_with_probability_p_and_rescale(name, shape, lead):
    p = 0.3
    flow.manual_seed(0)
    x = flow.tensor(_rng(6).random(shape) + 1.0)
    module = getattr(nn, name)(p)
    assert repr(module) == repr(getattr(torch.nn, name)(p))
    y = module(x)
    kept = (y != 0).numpy()
    assert 0.2 < 1 - kept.mean() < 0.4
    np.testing.assert_allclose(y.numpy()[kept], x.numpy()[kept] / (1 - p))
    if lead:  # whole channels: every position of a (sample, channel) shares its fate
        channels = kept.reshape(*shape[:lead], -1)
        assert (channels.all(-1) | ~channels.any(-1)).all()
    module.eval()
    assert np.array_equal(module(x).numpy(), x.numpy())
    assert np.array_equal(getattr(nn, name)(0.0)(x).numpy(), x.numpy())
    assert not getattr(nn, name)(1.0)(x).numpy().any()


@pytest.mark.parametrize("name,feature", [("AlphaDropout", False), ("FeatureAlphaDropout", True)])
def test_alpha_dropouts_keep_mean_and_variance(name, feature):
    p = 0.2
    flow.manual_seed(1)
    shape = (400, 50, 4) if feature else (200, 100)
    x = flow.tensor(_rng(7).standard_normal(shape))
    module = getattr(nn, name)(p)
    assert repr(module) == repr(getattr(torch.nn, name)(p))
    y = module(x).numpy()
    assert abs(y.mean()) < 0.05 and abs(y.std() - 1.0) < 0.05
    # Dropped units all take one value, a' = -alpha * a + b for SELU's alpha.
    alpha = 1.7580993408473766
    a = 1.0 / np.sqrt((alpha**2 * p + 1) * (1 - p))
    dropped = np.isclose(y, alpha * a * p - alpha * a)
    assert 0.15 < dropped.mean() < 0.25
    kept = ~dropped
    np.testing.assert_allclose(y[kept], x.numpy()[kept] * a + alpha * a * p)
    if feature:
        assert (dropped.all(-1) | ~dropped.any(-1)).all()
    module.eval()
    assert np.array_equal(module(x).numpy(), x.numpy())
    assert np.array_equal(F.alpha_dropout(x, p).numpy(), x.numpy())  # training=False default


def test_dropout_gradients_follow_the_mask_and_inplace_works():
    x = flow.tensor(_rng(8).random((30, 20, 2)) + 1.0).requires_grad_(True)
    for fn in (F.dropout, F.dropout1d, F.alpha_dropout, F.feature_alpha_dropout):
        x.grad = None
        y = fn(x, 0.4, True)
        y.sum().backward()
        # y = x * noise (+ a shift taking one value for dropped and one for kept units)
        shift = np.round(y.detach().numpy() - x.detach().numpy() * x.grad.numpy(), 12)
        assert len(np.unique(shift)) == (2 if "alpha" in fn.__name__ else 1)
    h = flow.tensor(np.ones((10, 8, 3, 1)))
    out = F.dropout2d(h * 1.0, 0.5, True, inplace=True)
    assert set(np.unique(out.numpy())) <= {0.0, 2.0}
    with pytest.raises(ValueError):
        nn.Dropout(1.5)
    with pytest.raises(RuntimeError):
        F.dropout1d(flow.zeros(2, 3, 4, 5))


# ---- embeddings ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(),
        dict(padding_idx=2),
        dict(padding_idx=-1, scale_grad_by_freq=True),
        dict(max_norm=1.0),
        dict(max_norm=0.5, norm_type=1.0),
    ],
    ids=str,
)
def test_embedding_matches_torch(kwargs):
    module, tmodule = (
        nn.Embedding(6, 3, **kwargs).double(),
        torch.nn.Embedding(6, 3, **kwargs).double(),
    )
    _copy_state(module, tmodule)
    index = np.array([[0, 2, 5, 2], [1, 1, 2, 4]])
    _check(module, tmodule, index)
    _close(module.weight, tmodule.weight)  # max_norm renormalises the looked-up rows in place
    assert repr(module) == repr(tmodule)
    assert list(module.state_dict()) == list(tmodule.state_dict())


def test_embedding_from_pretrained():
    table = _rng(9).standard_normal((4, 3))
    module = nn.Embedding.from_pretrained(flow.tensor(table), padding_idx=1)
    tmodule = torch.nn.Embedding.from_pretrained(torch.tensor(table), padding_idx=1)
    assert not module.weight.requires_grad and module.padding_idx == 1
    _close(module(flow.tensor([[3, 1]])), tmodule(torch.tensor([[3, 1]])))
    assert nn.Embedding.from_pretrained(flow.tensor(table), freeze=False).weight.requires_grad
    bag = nn.EmbeddingBag.from_pretrained(flow.tensor(table), mode="max")
    tbag = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(table), mode="max")
    _close(bag(flow.tensor([[0, 2], [1, 3]])), tbag(torch.tensor([[0, 2], [1, 3]])))
    with pytest.raises(ValueError):
        nn.Embedding.from_pretrained(flow.zeros(3))


BAG_CASES = [
    dict(mode="sum"),
    dict(mode="mean"),
    dict(mode="max"),
    dict(mode="mean", padding_idx=0),
    dict(mode="max", padding_idx=2),
    dict(mode="sum", include_last_offset=True),
    dict(mode="mean", scale_grad_by_freq=True),
    dict(mode="sum", max_norm=1.0),
]


@pytest.mark.parametrize("kwargs", BAG_CASES, ids=str)
def test_embedding_bag_matches_torch(kwargs):
    module = nn.EmbeddingBag(7, 3, **kwargs).double()
    tmodule = torch.nn.EmbeddingBag(7, 3, **kwargs).double()
    _copy_state(module, tmodule)
    assert repr(module) == repr(tmodule)
    # 1-d input with offsets, an empty bag included; then a 2-d input.
    index = np.array([1, 2, 0, 4, 5, 2, 2, 6, 0])
    offsets = np.array([0, 3, 3, 7, 9] if kwargs.get("include_last_offset") else [0, 3, 3, 7])
    for args in ((index, offsets), (index.reshape(3, 3),)):
        if len(args) == 1 and kwargs.get("include_last_offset"):
            continue
        module.zero_grad(), tmodule.zero_grad()
        _check(module, tmodule, *args)
    _close(module.weight, tmodule.weight)


def test_embedding_bag_per_sample_weights_and_errors():
    rng = _rng(10)
    table = rng.standard_normal((5, 2))
    w, tw = _pair(table, True)
    psw, tpsw = _pair(rng.standard_normal(6), True)
    index, offsets = np.array([0, 4, 4, 1, 3, 2]), np.array([0, 2, 5])
    y = F.embedding_bag(
        flow.tensor(index), w, flow.tensor(offsets), mode="sum", per_sample_weights=psw
    )
    ty = TF.embedding_bag(
        torch.tensor(index), tw, torch.tensor(offsets), mode="sum", per_sample_weights=tpsw
    )
    _close(y, ty)
    (y * y).sum().backward(), (ty * ty).sum().backward()
    _close(w.grad, tw.grad), _close(psw.grad, tpsw.grad)
    with pytest.raises(NotImplementedError):
        F.embedding_bag(
            flow.tensor(index), w, flow.tensor(offsets), mode="max", per_sample_weights=psw
        )
    with pytest.raises(ValueError):
        F.embedding_bag(flow.tensor(index.reshape(2, 3)), w, flow.tensor(offsets))
    with pytest.raises(ValueError):
        F.embedding_bag(flow.tensor(index), w)


# ---- containers ---------------------------------------------------------------------------


def _names(module):
    return [n for n, _ in module.named_children()]


def test_sequential_api_matches_torch():
    def build(m):
        return m.Sequential(m.Linear(2, 3), m.ReLU(), m.Linear(3, 4), m.Tanh())

    s, ts = build(nn), build(torch.nn)
    for op in [
        lambda q, L: q.__delitem__(1),
        lambda q, L: q.insert(1, L(3, 3)),
        lambda q, L: q.append(L(4, 4)),
        lambda q, L: q.pop(0),
        lambda q, L: q.__delitem__(slice(0, 2)),
        lambda q, L: q.insert(-1, L(1, 1)),
        lambda q, L: q.extend([L(5, 5)]),
    ]:
        op(s, nn.Linear), op(ts, torch.nn.Linear)
        assert _names(s) == _names(ts)
        assert [type(m).__name__ for m in s] == [type(m).__name__ for m in ts]
    assert len(s + s) == len(ts + ts) and len(s * 2) == len(ts * 2) and len(2 * s) == len(ts * 2)
    s += build(nn)
    ts += build(torch.nn)
    assert _names(s) == _names(ts)
    s *= 2
    ts *= 2
    assert _names(s) == _names(ts)
    assert _names(s[1:6:2]) == _names(ts[1:6:2]) and type(s[1:3]) is nn.Sequential
    named = nn.Sequential(OrderedDict(a=nn.ReLU(), b=nn.Tanh()))
    assert _names(named) == ["a", "b"] and isinstance(named[-1], nn.Tanh)
    with pytest.raises(IndexError):
        named[2]
    with pytest.raises(ValueError):
        named + nn.ModuleList()


def test_module_list_and_dict_api_match_torch():
    def build(m):
        return m.ModuleList([m.Linear(1, 1), m.ReLU(), m.ReLU(), m.Linear(1, 2)])

    ml, tml = build(nn), build(torch.nn)
    assert repr(ml) == repr(tml)  # runs of equal modules print once
    for op in [
        lambda q, L: q.insert(1, L(2, 2)),
        lambda q, L: q.pop(-1),
        lambda q, L: q.__delitem__(slice(1, 3)),
        lambda q, L: q.extend([L(3, 3)]),
        lambda q, L: q.__setitem__(-1, L(4, 4)),
    ]:
        op(ml, nn.Linear), op(tml, torch.nn.Linear)
        assert _names(ml) == _names(tml) and repr(ml) == repr(tml)
    assert _names(ml + ml) == _names(tml + tml)
    md = nn.ModuleDict({"b": nn.ReLU(), "a": nn.Tanh()})
    tmd = torch.nn.ModuleDict({"b": torch.nn.ReLU(), "a": torch.nn.Tanh()})
    md.update([("c", nn.ReLU())]), tmd.update([("c", torch.nn.ReLU())])
    assert list(md) == list(tmd) and isinstance(md.pop("b"), nn.ReLU) and "b" not in md
    with pytest.raises(ValueError):
        md.update([("x", nn.ReLU(), 1)])


def test_parameter_list_and_dict_match_torch():
    a, b = np.ones((2, 3)), np.zeros(4)

    def lists(m, lib):
        return m.ParameterList([lib.tensor(a), m.Parameter(lib.tensor(b)), "text"])

    pl, tpl = lists(nn, flow), lists(torch.nn, torch)
    assert len(pl) == 3 and isinstance(pl[0], nn.Parameter) and pl[2] == "text"
    assert list(pl.state_dict()) == list(tpl.state_dict()) == ["0", "1"]
    pl.append(flow.ones(1)), tpl.append(torch.ones(1))
    assert [n for n, _ in pl.named_parameters()] == [n for n, _ in tpl.named_parameters()]
    assert len(pl[1:]) == 3 and repr(pl).count("Parameter containing") == 3
    assert repr(pl).replace("oneflowlike", "torch") == repr(tpl)
    with pytest.raises(RuntimeError):
        pl(1)

    def dicts(m, lib):
        return m.ParameterDict({"w": lib.tensor(a), "b": m.Parameter(lib.tensor(b)), "k": 1})

    pd, tpd = dicts(nn, flow), dicts(torch.nn, torch)
    assert list(pd) == list(tpd) == ["b", "k", "w"]  # a plain dict is taken in sorted order
    assert list(pd.state_dict()) == list(tpd.state_dict())
    pd["z"] = flow.zeros(1)
    tpd["z"] = torch.zeros(1)
    assert isinstance(pd["z"], nn.Parameter) and pd.get("missing", 5) == 5
    assert list(pd.popitem()[1].shape) == [1] and "z" not in pd
    merged = pd | nn.ParameterDict({"extra": flow.ones(2)})
    assert list(merged) == ["b", "k", "w", "extra"] and len(pd) == 3
    pd.setdefault("d", flow.ones(3))
    assert list(pd.keys())[-1] == "d" and len(list(pd.values())) == 4
    pd.clear()
    assert len(pd) == 0 and not list(pd.parameters())
    with pytest.raises(TypeError):
        pd[1] = flow.ones(1)


def test_container_in_a_model_trains_like_torch():
    def build(m):
        return m.Sequential(
            m.Linear(3, 4), m.ModuleList([m.Linear(4, 4)])[0], m.Tanh(), m.Linear(4, 2)
        )

    module, tmodule = build(nn).double(), build(torch.nn).double()
    _copy_state(module, tmodule)
    assert list(module.state_dict()) == list(tmodule.state_dict())
    _check(module, tmodule, _rng(11).standard_normal((5, 3)))


# ---- lazy modules -------------------------------------------------------------------------


def test_lazy_linear_materializes_and_becomes_linear():
    module, tmodule = nn.LazyLinear(4).double(), torch.nn.LazyLinear(4).double()
    assert repr(module) == repr(tmodule) and module.has_uninitialized_params()
    x = _rng(12).standard_normal((2, 3))
    module(flow.tensor(x)), tmodule(torch.tensor(x))
    assert type(module) is nn.Linear and module.in_features == 3
    assert module.weight.dtype == flow.float64 and tuple(module.weight.shape) == (4, 3)
    _copy_state(module, tmodule)
    _check(module, tmodule, x)
    lazy = nn.LazyLinear(2, bias=False)
    lazy.load_state_dict({"weight": flow.zeros(2, 5)})
    assert tuple(lazy.weight.shape) == (2, 5) and lazy.bias is None


LAZY_CONVS = [
    ("LazyConv1d", "Conv1d", (2, 4, 6), dict(kernel_size=3, padding=1)),
    ("LazyConv2d", "Conv2d", (2, 4, 5, 5), dict(kernel_size=3, groups=2)),
    ("LazyConv3d", "Conv3d", (1, 2, 3, 3, 3), dict(kernel_size=2)),
    ("LazyConvTranspose1d", "ConvTranspose1d", (2, 4, 5), dict(kernel_size=3, stride=2)),
    ("LazyConvTranspose2d", "ConvTranspose2d", (2, 4, 3, 3), dict(kernel_size=2, groups=2)),
    ("LazyConvTranspose3d", "ConvTranspose3d", (1, 2, 2, 2, 2), dict(kernel_size=2)),
]


@pytest.mark.parametrize("lazy,plain,shape,kwargs", LAZY_CONVS, ids=[c[0] for c in LAZY_CONVS])
def test_lazy_convolutions_materialize_and_become_their_class(lazy, plain, shape, kwargs):
    if not hasattr(nn, lazy):
        pytest.skip(f"nn.{plain} does not exist yet, so neither does nn.{lazy}")
    module, tmodule = (
        getattr(nn, lazy)(4, **kwargs).double(),
        getattr(torch.nn, lazy)(4, **kwargs).double(),
    )
    x = _rng(13).standard_normal(shape)
    module(flow.tensor(x)), tmodule(torch.tensor(x))
    assert type(module) is getattr(nn, plain) and module.in_channels == shape[1]
    assert list(module.state_dict()) == list(tmodule.state_dict())
    _copy_state(module, tmodule)
    _check(module, tmodule, x)
