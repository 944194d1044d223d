"""Normalization modules and functions against PyTorch in float64: forward, input and parameter
gradients, running statistics over a few training steps, eval mode, state_dict keys and loading
a PyTorch state dict."""

import numpy as np
import pytest
import torch

import oneflowlike as flow
import oneflowlike.nn as nn
import oneflowlike.nn.functional as F

pytestmark = pytest.mark.unit
torch.set_num_threads(1)  # tiny tensors: threads only add overhead

TOL = dict(rtol=1e-9, atol=1e-10)


def _rng(seed=0):
    return np.random.default_rng(seed)


def _pair(array, requires_grad=False):
    f, t = flow.tensor(array), torch.tensor(array)
    return f.requires_grad_(requires_grad), t.requires_grad_(requires_grad)


def _close(mine, theirs, **tol):
    theirs = theirs.detach().numpy() if isinstance(theirs, torch.Tensor) else theirs
    np.testing.assert_allclose(mine.numpy(), theirs, **(tol or TOL))


def _copy_state(module, tmodule):
    """The torch module's parameters and buffers, loaded into ours."""
    state = {k: flow.tensor(v.detach().numpy()) for k, v in tmodule.state_dict().items()}
    module.load_state_dict(state)


def _randomize(tmodule, seed=1):
    rng = _rng(seed)
    with torch.no_grad():
        for p in tmodule.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape))))


def _check_module(module, tmodule, shape, steps=1, seed=0):
    """Forward and backward `steps` times; outputs, every gradient and every buffer agree."""
    rng = _rng(seed)
    for _ in range(steps):
        x, tx = _pair(rng.standard_normal(shape), True)
        y, ty = module(x), tmodule(tx)
        _close(y, ty)
        g = rng.standard_normal(tuple(ty.shape))
        y.backward(flow.tensor(g))
        ty.backward(torch.tensor(g))
        _close(x.grad, tx.grad)
    params = dict(module.named_parameters())
    for name, tp in tmodule.named_parameters():
        _close(params[name].grad, tp.grad)
    buffers = dict(module.named_buffers())
    for name, tb in tmodule.named_buffers():
        _close(buffers[name], tb)


BATCH_NORMS = [
    ("BatchNorm1d", (4, 3)),
    ("BatchNorm1d", (4, 3, 5)),
    ("BatchNorm2d", (3, 3, 2, 4)),
    ("BatchNorm3d", (2, 3, 2, 2, 3)),
    ("SyncBatchNorm", (3, 3, 4)),
]
NORM_OPTIONS = [
    dict(),
    dict(momentum=None),
    dict(affine=False, momentum=0.3),
    dict(track_running_stats=False),
    dict(bias=False, eps=1e-3),
]


@pytest.mark.parametrize("options", NORM_OPTIONS, ids=str)
@pytest.mark.parametrize("name,shape", BATCH_NORMS, ids=str)
def test_batch_norm_trains_and_evaluates_as_torch(name, shape, options):
    module = getattr(nn, name)(3, **options).double()
    tmodule = getattr(torch.nn, name)(3, **options).double()
    _randomize(tmodule)
    _copy_state(module, tmodule)
    _check_module(module, tmodule, shape, steps=3)
    if options.get("track_running_stats", True):
        assert int(module.num_batches_tracked.item()) == 3
    module.eval(), tmodule.eval()
    _check_module(module, tmodule, shape, seed=5)
    assert list(module.state_dict()) == list(tmodule.state_dict())
    assert repr(module) == repr(tmodule)


INSTANCE_NORMS = [
    ("InstanceNorm1d", (2, 3, 5)),
    ("InstanceNorm1d", (3, 6)),
    ("InstanceNorm2d", (2, 3, 2, 3)),
    ("InstanceNorm2d", (3, 3, 4)),
    ("InstanceNorm3d", (2, 3, 2, 2, 2)),
]
INSTANCE_OPTIONS = [
    dict(),
    dict(affine=True),
    dict(affine=True, track_running_stats=True, momentum=0.2),
    dict(track_running_stats=True, momentum=None),
    dict(affine=True, bias=False),
]


@pytest.mark.parametrize("options", INSTANCE_OPTIONS, ids=str)
@pytest.mark.parametrize("name,shape", INSTANCE_NORMS, ids=str)
def test_instance_norm_trains_and_evaluates_as_torch(name, shape, options):
    module = getattr(nn, name)(3, **options).double()
    tmodule = getattr(torch.nn, name)(3, **options).double()
    _randomize(tmodule)
    _copy_state(module, tmodule)
    _check_module(module, tmodule, shape, steps=2)
    module.eval(), tmodule.eval()
    _check_module(module, tmodule, shape, seed=3)
    assert list(module.state_dict()) == list(tmodule.state_dict())
    assert repr(module) == repr(tmodule)


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.LayerNorm(4),
        lambda m: m.LayerNorm((3, 4), eps=1e-3, bias=False),
        lambda m: m.LayerNorm(4, elementwise_affine=False),
        lambda m: m.RMSNorm(4),
        lambda m: m.RMSNorm((3, 4), eps=1e-4),
        lambda m: m.RMSNorm(4, elementwise_affine=False),
        lambda m: m.GroupNorm(3, 6),
        lambda m: m.GroupNorm(2, 6, affine=False),
        lambda m: m.GroupNorm(1, 6, bias=False),
        lambda m: m.LocalResponseNorm(3),
        lambda m: m.LocalResponseNorm(2, alpha=0.1, beta=0.5, k=2.0),
        lambda m: m.CrossMapLRN2d(3, alpha=0.1, beta=0.75, k=1.5),
        lambda m: m.CrossMapLRN2d(4, alpha=0.2),
    ],
)
def test_stateless_norms_match_torch(make):
    module, tmodule = make(nn).double(), make(torch.nn).double()
    _randomize(tmodule)
    _copy_state(module, tmodule)
    shape = (2, 6, 3, 4)
    _check_module(module, tmodule, shape)
    assert list(module.state_dict()) == list(tmodule.state_dict())
    assert repr(module) == repr(tmodule)


def test_batch_norm_running_stats_and_state_dict_round_trip():
    tmodule = torch.nn.BatchNorm2d(3).double()
    tmodule.train()
    tmodule(torch.tensor(_rng(2).standard_normal((4, 3, 2, 2))))
    module = nn.BatchNorm2d(3).double()
    _copy_state(module, tmodule)
    assert int(module.num_batches_tracked.item()) == 1
    _close(module.running_var, tmodule.running_var)
    # Checkpoints without the batch counter (PyTorch < 0.4.1) still load.
    state = {k: v for k, v in module.state_dict().items() if k != "num_batches_tracked"}
    nn.BatchNorm2d(3).double().load_state_dict(state)
    # Instance norm without tracking rejects running statistics, as PyTorch does.
    with pytest.raises(RuntimeError, match="Unexpected running stats"):
        nn.InstanceNorm1d(3).load_state_dict(
            {"running_mean": flow.zeros(3), "running_var": flow.ones(3)}
        )


def test_float32_spot_checks():
    x = _rng(4).standard_normal((3, 4, 5)).astype(np.float32)
    for make in (lambda m: m.BatchNorm1d(4), lambda m: m.InstanceNorm1d(4, affine=True)):
        module, tmodule = make(nn), make(torch.nn)
        _close(module(flow.tensor(x)), tmodule(torch.tensor(x)), rtol=1e-5, atol=1e-5)
    _close(
        F.local_response_norm(flow.tensor(x), 3),
        torch.nn.functional.local_response_norm(torch.tensor(x), 3),
        rtol=1e-5,
        atol=1e-6,
    )


@pytest.mark.parametrize("p,dim", [(2, 1), (1, -1), (3.0, 0), (float("inf"), 1)])
def test_normalize_matches_torch(p, dim):
    a = _rng(6).standard_normal((3, 4))
    a[1] = 0.0  # a zero row: eps clamps the norm, and its gradient stays finite
    x, tx = _pair(a, True)
    y, ty = F.normalize(x, p, dim), torch.nn.functional.normalize(tx, p, dim)
    _close(y, ty)
    g = _rng(7).standard_normal((3, 4))
    y.backward(flow.tensor(g)), ty.backward(torch.tensor(g))
    _close(x.grad, tx.grad)


def test_functional_norms_match_torch():
    rng = _rng(8)
    x, tx = _pair(rng.standard_normal((2, 4, 3)), True)
    w, tw = _pair(rng.standard_normal(4), True)
    b, tb = _pair(rng.standard_normal(4), True)
    mean, var = rng.standard_normal(4), rng.random(4) + 0.5
    stats = [(_pair(mean.copy()), _pair(var.copy())) for _ in range(4)]
    rm, trm, rv, trv = [list(z) for z in zip(*[(m[0], m[1], v[0], v[1]) for m, v in stats])]
    TF = torch.nn.functional
    pairs = [
        (
            F.batch_norm(x, rm[0], rv[0], w, b, True, 0.2),
            TF.batch_norm(tx, trm[0], trv[0], tw, tb, True, 0.2),
        ),
        (F.batch_norm(x, rm[1], rv[1], w, b), TF.batch_norm(tx, trm[1], trv[1], tw, tb)),
        (F.instance_norm(x, rm[2], rv[2], w, b), TF.instance_norm(tx, trm[2], trv[2], tw, tb)),
        (
            F.instance_norm(x, rm[3], rv[3], w, b, use_input_stats=False),
            TF.instance_norm(tx, trm[3], trv[3], tw, tb, use_input_stats=False),
        ),
        (F.group_norm(x, 2, w, b), TF.group_norm(tx, 2, tw, tb)),
        (F.layer_norm(x, (3,)), TF.layer_norm(tx, (3,))),
        (F.rms_norm(x, [4, 3]), TF.rms_norm(tx, [4, 3])),
        (F.local_response_norm(x, 2), TF.local_response_norm(tx, 2)),
    ]
    for y, ty in pairs:
        _close(y, ty)
    for mine, theirs in zip(rm + rv, trm + trv):
        _close(mine, theirs)
    sum(y.sum() * (i + 1) for i, (y, _) in enumerate(pairs)).backward()
    sum(ty.sum() * (i + 1) for i, (_, ty) in enumerate(pairs)).backward()
    for mine, theirs in ((x, tx), (w, tw), (b, tb)):
        _close(mine.grad, theirs.grad)


def test_lazy_norms_materialize_and_become_their_class():
    for lazy, plain, shape in [
        ("LazyBatchNorm1d", "BatchNorm1d", (4, 3)),
        ("LazyBatchNorm2d", "BatchNorm2d", (2, 3, 2, 2)),
        ("LazyBatchNorm3d", "BatchNorm3d", (2, 3, 1, 2, 2)),
        ("LazyInstanceNorm1d", "InstanceNorm1d", (2, 3, 4)),
        ("LazyInstanceNorm2d", "InstanceNorm2d", (2, 3, 2, 2)),
        ("LazyInstanceNorm3d", "InstanceNorm3d", (2, 3, 2, 2, 2)),
    ]:
        options = dict(affine=True, track_running_stats=True)
        module = getattr(nn, lazy)(**options).double()
        tmodule = getattr(torch.nn, lazy)(**options).double()
        assert module.has_uninitialized_params()
        _check_module(module, tmodule, shape)
        assert type(module) is getattr(nn, plain) and module.num_features == 3
        assert list(module.state_dict()) == list(tmodule.state_dict())
    # A state dict gives a lazy module its shapes.
    module = nn.LazyBatchNorm1d()
    module.load_state_dict(nn.BatchNorm1d(5).state_dict())
    assert tuple(module.weight.shape) == (5,) and tuple(module.running_mean.shape) == (5,)


def test_sync_batch_norm_is_batch_norm_locally_and_converts_modules():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4, momentum=None), nn.ReLU())
    model.add_module("inner", nn.Sequential(nn.BatchNorm2d(2, affine=False)))
    model.eval()
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert type(converted[1]) is nn.SyncBatchNorm and type(converted.inner[0]) is nn.SyncBatchNorm
    assert converted[1].weight is model[1].weight and converted[1].momentum is None
    assert converted[1].running_mean is model[1].running_mean and not converted[1].training
    assert type(converted[0]) is nn.Linear


def test_sync_batch_norm_on_a_global_tensor_uses_the_whole_batch():
    placement = flow.placement("cpu", [0])
    a = _rng(9).standard_normal((4, 3, 2))
    local = nn.SyncBatchNorm(3).double()
    glob = nn.SyncBatchNorm(3).double().to_global(placement, flow.sbp.broadcast)
    y = local(flow.tensor(a))
    gy = glob(flow.tensor(a).to_global(placement=placement, sbp=flow.sbp.split(0)))
    assert gy.is_global
    _close(gy.to_local(), y.numpy())
    _close(glob.running_var.to_local(), local.running_var.numpy())


@pytest.mark.parametrize(
    "call,error",
    [
        (lambda: nn.BatchNorm2d(3)(flow.zeros(2, 3)), ValueError),
        (lambda: nn.BatchNorm1d(3)(flow.zeros(1, 3)), ValueError),
        (lambda: nn.InstanceNorm1d(3, affine=True)(flow.zeros(2, 4, 5)), ValueError),
        (lambda: nn.InstanceNorm2d(3)(flow.zeros(2, 3)), ValueError),
        (lambda: F.instance_norm(flow.zeros(2, 3, 1)), ValueError),
        (lambda: nn.GroupNorm(4, 6), ValueError),
        (lambda: nn.SyncBatchNorm(3)(flow.zeros(3)), ValueError),
        (lambda: F.local_response_norm(flow.zeros(2, 3), 2), ValueError),
        (lambda: nn.CrossMapLRN2d(3)(flow.zeros(2, 3, 4)), ValueError),
    ],
)
def test_bad_inputs_raise(call, error):
    with pytest.raises(error):
        call()
