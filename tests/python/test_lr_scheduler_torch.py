"""Every torch.optim.lr_scheduler scheduler (and swa_utils) against PyTorch itself: the lr (and
cycled momentum) of every param group over 30 steps, state_dict keys, resuming, errors."""

import warnings

import numpy as np
import pytest
import torch

import oneflowlike as flow
from oneflowlike import optim
from oneflowlike.optim import lr_scheduler as fsched
from oneflowlike.optim import swa_utils as fswa

TS = torch.optim.lr_scheduler
pytestmark = pytest.mark.filterwarnings("ignore:Detected call of")


class TorchGroups(torch.optim.Optimizer):
    """Param groups a torch scheduler accepts, without torch.optim.Optimizer's constructor (its
    first use imports torch._dynamo: seconds). Schedulers read only the groups and defaults."""

    def __init__(self, groups, defaults):
        self.param_groups, self.defaults, self.state = groups, defaults, {}

    def step(self, closure=None):
        pass


def opt_step(opt):
    if not isinstance(opt, torch.optim.Optimizer):
        opt.step()


def optimizers(opt="SGD"):
    """Torch-side groups and a oneflowlike optimizer, two param groups of different lrs."""
    kwargs = dict(lr=0.1, momentum=0.9) if opt == "SGD" else dict(lr=0.1)
    f = [flow.nn.Parameter(flow.ones(2)) for _ in range(2)]
    fopt = getattr(optim, opt)([{"params": [f[0]]}, {"params": [f[1]], "lr": 0.05}], **kwargs)
    groups = [{k: v for k, v in g.items() if k != "params"} for g in fopt.param_groups]
    for g in groups:
        g["params"] = [torch.nn.Parameter(torch.ones(2))]
    return TorchGroups(groups, dict(fopt.defaults)), fopt


def make(name, opt, lib, *args, **kwargs):
    return getattr(lib, name)(opt, *args, **kwargs)


def lam(e):
    return 0.9**e


def mult(e):
    return 0.95


CASES = [
    ("LambdaLR", (lam,), {}),
    ("LambdaLR", ([lam, lambda e: 1 / (e + 1)],), {}),
    ("MultiplicativeLR", (mult,), {}),
    ("StepLR", (4,), dict(gamma=0.5)),
    ("MultiStepLR", ([3, 8, 8, 20],), dict(gamma=0.5)),
    ("ConstantLR", (), dict(factor=0.25, total_iters=6)),
    ("LinearLR", (), dict(start_factor=0.2, end_factor=0.9, total_iters=10)),
    ("ExponentialLR", (0.9,), {}),
    ("PolynomialLR", (), dict(total_iters=12, power=2.0)),
    ("CosineAnnealingLR", (7,), dict(eta_min=0.001)),
    ("CosineAnnealingWarmRestarts", (5,), dict(T_mult=2, eta_min=0.001)),
    ("CosineAnnealingWarmRestarts", (4,), {}),
    ("CyclicLR", (0.01, 0.1), dict(step_size_up=4, step_size_down=3)),
    ("CyclicLR", (0.01, [0.1, 0.2]), dict(step_size_up=3, mode="triangular2")),
    ("CyclicLR", (0.01, 0.1), dict(step_size_up=3, mode="exp_range", gamma=0.9)),
    ("OneCycleLR", (0.5,), dict(total_steps=31)),
    ("OneCycleLR", ([0.5, 0.3],), dict(epochs=4, steps_per_epoch=8, anneal_strategy="linear",
                                      three_phase=True, pct_start=0.25)),  # fmt: skip
]


def run(opt, sched, steps=30):
    lrs = []
    for _ in range(steps):
        opt_step(opt)
        sched.step()
        lrs.append(
            [g["lr"] for g in opt.param_groups] + [g.get("momentum") for g in opt.param_groups]
        )
        assert sched.get_last_lr() == [g["lr"] for g in opt.param_groups]
    return lrs


def assert_same_lrs(a, b):
    np.testing.assert_allclose(
        np.array(a, dtype=float), np.array(b, dtype=float), rtol=1e-12, atol=1e-15
    )


@pytest.mark.parametrize(
    "name,args,kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_lr_sequence_matches_torch(name, args, kwargs):
    topt, fopt = optimizers()
    ts, fs = make(name, topt, TS, *args, **kwargs), make(name, fopt, fsched, *args, **kwargs)
    assert fs.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12)
    assert_same_lrs(run(fopt, fs), run(topt, ts))
    tkeys = {k for k in ts.state_dict() if not k.startswith("_scale_fn")}
    fkeys = {k for k in fs.state_dict() if not k.startswith("_scale_fn")}
    assert fkeys == tkeys


def test_cyclic_lr_cycles_adams_beta1():
    topt, fopt = optimizers("Adam")
    ts = TS.CyclicLR(topt, 0.01, 0.1, step_size_up=2)
    fs = fsched.CyclicLR(fopt, 0.01, 0.1, step_size_up=2)
    for _ in range(6):
        fopt.step(), ts.step(), fs.step()
        assert fopt.param_groups[0]["betas"] == pytest.approx(topt.param_groups[0]["betas"])


@pytest.mark.parametrize("kind", ["sequential", "chained"])
def test_composite_schedulers_match_torch(kind):
    out = []
    for lib, opt in zip((TS, fsched), optimizers()):
        warm = lib.LinearLR(opt, start_factor=0.1, total_iters=4)
        decay = lib.ExponentialLR(opt, gamma=0.9)
        cos = lib.CosineAnnealingLR(opt, T_max=6)
        if kind == "sequential":
            sched = lib.SequentialLR(opt, [warm, decay, cos], milestones=[4, 12])
        else:
            sched = lib.ChainedScheduler([warm, decay])
        out.append(run(opt, sched))
    assert_same_lrs(out[1], out[0])


@pytest.mark.parametrize(
    "kwargs",
    [dict(patience=2), dict(mode="max", factor=0.5, patience=1, cooldown=2, threshold_mode="abs",
                            min_lr=[0.01, 0.02])],  # fmt: skip
)
def test_reduce_lr_on_plateau_matches_torch(kwargs):
    metrics = [1.0, 0.9, 0.95, 0.95, 0.96, 0.8, 0.81, 0.82, 0.83, 0.84, 0.7, 0.9, 0.9, 0.9] * 2
    out = []
    for lib, opt in zip((TS, fsched), optimizers()):
        sched = lib.ReduceLROnPlateau(opt, **kwargs)
        lrs = []
        for m in metrics:
            opt_step(opt)
            sched.step(m)
            lrs.append([g["lr"] for g in opt.param_groups])
        out.append((lrs, sched.num_bad_epochs, sched.cooldown_counter, sched.best))
    assert_same_lrs(out[1][0], out[0][0])
    assert out[1][1:] == out[0][1:]


@pytest.mark.parametrize("name,args", [("StepLR", (3,)), ("MultiStepLR", ([2, 5],)),
                                       ("CosineAnnealingLR", (5,)), ("PolynomialLR", ()),
                                       ("CosineAnnealingWarmRestarts", (3, 2))])  # fmt: skip
def test_step_with_an_epoch_uses_the_closed_form(name, args):
    out = []
    for lib, opt in zip((TS, fsched), optimizers()):
        sched = getattr(lib, name)(opt, *args)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for epoch in [3, 7, 1, 10]:
                sched.step(epoch)
                out.append([g["lr"] for g in opt.param_groups])
    assert_same_lrs(out[4:], out[:4])


def test_state_dict_round_trip_resumes_like_torch():
    """Optimizer and scheduler state saved at step 10, loaded into fresh ones, 10 more steps."""
    seqs = []
    for lib in (TS, fsched):
        opt = optimizers()[0 if lib is TS else 1]
        sched = lib.OneCycleLR(opt, 0.5, total_steps=25)
        for _ in range(10):
            opt_step(opt), sched.step()
        sched_state = sched.state_dict()
        groups = [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]
        fresh = optimizers()[0 if lib is TS else 1]
        resumed = lib.OneCycleLR(fresh, 0.5, total_steps=25)
        if lib is TS:  # (what torch's Optimizer.load_state_dict does to the groups)
            for g, saved in zip(fresh.param_groups, groups):
                g.update(saved)
        else:
            fresh.load_state_dict(opt.state_dict())
        resumed.load_state_dict(sched_state)
        seqs.append(run(fresh, resumed, 14))
    assert_same_lrs(seqs[1], seqs[0])


def test_errors_match_torch():
    _, fopt = optimizers()
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        fsched.ReduceLROnPlateau(fopt, factor=1.5)
    with pytest.raises(ValueError, match="total_steps OR"):
        fsched.OneCycleLR(fopt, 0.1)
    with pytest.raises(ValueError, match="T_0"):
        fsched.CosineAnnealingWarmRestarts(fopt, 0)
    with pytest.raises(ValueError, match="2 lr_lambdas"):
        fsched.LambdaLR(fopt, [lam])
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        fsched.ChainedScheduler([fsched.ReduceLROnPlateau(fopt)])
    with pytest.raises(TypeError, match="not an Optimizer"):
        fsched.StepLR(object(), 2)
    with pytest.raises(ValueError, match="same length"):
        fsched.CyclicLR(fopt, [0.1], 0.2)
    _, other = optimizers()
    with pytest.raises(ValueError, match="same optimizer"):
        fsched.SequentialLR(fopt, [fsched.StepLR(fopt, 2), fsched.StepLR(other, 2)], [3])
    assert set(TS.__all__) <= set(fsched.__all__)


@pytest.mark.parametrize("strategy,epochs", [("cos", 4), ("linear", 3), ("cos", 0)])
def test_swalr_matches_torch(strategy, epochs):
    out = []
    for lib, opt in zip((torch.optim.swa_utils, fswa), optimizers()):
        sched = lib.SWALR(opt, swa_lr=[0.02, 0.01], anneal_epochs=epochs, anneal_strategy=strategy)
        out.append(run(opt, sched, 8))
    assert_same_lrs(out[1], out[0])


def models():
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    t = t.double()
    f = flow.nn.Sequential(flow.nn.Linear(3, 4), flow.nn.BatchNorm1d(4), flow.nn.Linear(4, 2))
    f = f.to(flow.float64)
    f.load_state_dict({k: flow.tensor(v.numpy()) for k, v in t.state_dict().items()})
    return t, f


def perturb(t, f, k):
    with torch.no_grad():
        for i, (tp, fp) in enumerate(zip(t.parameters(), f.parameters())):
            tp.add_(0.1 * (k + i))
            fp.data = flow.tensor(tp.detach().numpy())
    x = np.random.default_rng(k).standard_normal((5, 3))
    t(torch.tensor(x)), f(flow.tensor(x))  # (moves the BatchNorm statistics)


@pytest.mark.parametrize(
    "kwargs_of",
    [
        lambda lib: {},
        lambda lib: dict(multi_avg_fn=lib.get_ema_multi_avg_fn(0.9)),
        lambda lib: dict(avg_fn=lib.get_ema_avg_fn(0.8), use_buffers=True),
        lambda lib: dict(avg_fn=lib.get_swa_avg_fn()),
        lambda lib: dict(use_buffers=True),
    ],
)
def test_averaged_model_matches_torch(kwargs_of):
    t, f = models()
    ta = torch.optim.swa_utils.AveragedModel(t, **kwargs_of(torch.optim.swa_utils))
    fa = fswa.AveragedModel(f, **kwargs_of(fswa))
    for k in range(4):
        perturb(t, f, k)
        ta.update_parameters(t)
        fa.update_parameters(f)
    tsd, fsd = ta.state_dict(), fa.state_dict()
    assert list(fsd) == list(tsd)
    for key in tsd:
        np.testing.assert_allclose(fsd[key].numpy(), tsd[key].numpy(), rtol=1e-12, atol=1e-14)
    x = np.random.default_rng(9).standard_normal((2, 3))
    ta.eval(), fa.eval()
    np.testing.assert_allclose(fa(flow.tensor(x)).numpy(), ta(torch.tensor(x)).detach().numpy(),
                               rtol=1e-10)  # fmt: skip


def test_update_bn_recomputes_batchnorm_statistics_like_torch():
    t, f = models()
    data = [np.random.default_rng(i).standard_normal((4, 3)) for i in range(3)]
    torch.optim.swa_utils.update_bn([(torch.tensor(d), 0) for d in data], t)
    fswa.update_bn([(flow.tensor(d), 0) for d in data], f)
    for key in ("1.running_mean", "1.running_var", "1.num_batches_tracked"):
        np.testing.assert_allclose(f.state_dict()[key].numpy(), t.state_dict()[key].numpy(),
                                   rtol=1e-12)  # fmt: skip
    assert f[1].momentum == t[1].momentum == 0.1 and f.training


def test_ema_decay_out_of_range_raises():
    with pytest.raises(ValueError, match="Invalid decay"):
        fswa.get_ema_multi_avg_fn(1.5)
