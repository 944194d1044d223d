"""Every torch.optim optimizer against PyTorch itself: the same parameters and gradients, several
steps and option combinations in float64, state_dict structure and round trips."""

import numpy as np
import pytest
import torch

import oneflowlike as flow
from oneflowlike import optim

SHAPES = [(3, 4), (4,)]


def init_params():
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s) for s in SHAPES]


def grad_of(arrays, step):
    """A smooth gradient field of the parameters (a quartic's), varying with the step."""
    return [0.5 * a + 0.3 * a**3 - 0.2 * np.cos(a + step) for a in arrays]


def pair(arrays, dtype=np.float64):
    tp = [torch.nn.Parameter(torch.tensor(a.astype(dtype))) for a in arrays]
    fp = [flow.nn.Parameter(flow.tensor(a.astype(dtype))) for a in arrays]
    return tp, fp


def set_grads(tp, fp, step, dtype=np.float64, sparse=False):
    grads = grad_of([p.detach().numpy().astype(np.float64) for p in tp], step)
    if sparse:  # every other row untouched
        for g in grads:
            g[step % 2 :: 2] = 0.0
    for t, f, g in zip(tp, fp, grads):
        t.grad = torch.tensor(g.astype(dtype))
        if sparse:
            t.grad = t.grad.to_sparse(1)
        f.grad = flow.tensor(g.astype(dtype))


def assert_params_close(tp, fp, rtol=1e-10, atol=1e-10):
    for t, f in zip(tp, fp):
        np.testing.assert_allclose(f.numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.5, dampening=0.3, maximize=True)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, amsgrad=True, weight_decay=0.1)),
    ("Adam", dict(lr=0.05, maximize=True, decoupled_weight_decay=True, weight_decay=0.1)),
    ("AdamW", dict(lr=0.05, amsgrad=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1, weight_decay=0.1, initial_accumulator_value=0.2)),
    ("Adagrad", dict(lr=0.1, maximize=True)),
    ("Adamax", dict(lr=0.05)),
    ("Adamax", dict(lr=0.05, weight_decay=0.1, maximize=True)),
    ("ASGD", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, lambd=1e-2, t0=2, weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=0.05)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.05)),
    ("RAdam", dict(lr=0.05, betas=(0.9, 0.9), weight_decay=0.1)),
    ("RAdam", dict(lr=0.05, betas=(0.9, 0.9), weight_decay=0.1, decoupled_weight_decay=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1, maximize=True)),
    ("Rprop", dict(lr=0.01)),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.08), maximize=True)),
    ("Adafactor", dict(lr=0.05)),
    ("Adafactor", dict(lr=0.05, weight_decay=0.1, eps=(1e-6, 1e-2), d=1.5, maximize=True)),
]


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_updates_match_torch_float64(name, kwargs):
    tp, fp = pair(init_params())
    topt, fopt = getattr(torch.optim, name)(tp, **kwargs), getattr(optim, name)(fp, **kwargs)
    for step in range(6):
        set_grads(tp, fp, step)
        topt.step()
        fopt.step()
        assert_params_close(tp, fp)


@pytest.mark.parametrize("kwargs", [dict(lr=0.05), dict(lr=0.05, betas=(0.5, 0.9), maximize=True)])
def test_sparse_adam_matches_torch_on_row_sparse_gradients(kwargs):
    tp, fp = pair(init_params())
    topt, fopt = torch.optim.SparseAdam(tp, **kwargs), optim.SparseAdam(fp, **kwargs)
    for step in range(5):
        set_grads(tp, fp, step, sparse=True)
        topt.step()
        fopt.step()
        assert_params_close(tp, fp)


@pytest.mark.parametrize("nesterov,adjust", [(True, None), (False, "match_rms_adamw")])
def test_muon_matches_torch_within_bfloat16(nesterov, adjust):
    # Newton-Schulz runs in bfloat16 in both (same roundings); a last-bit flip may differ.
    tp, fp = pair([init_params()[0]])
    kw = dict(lr=0.02, nesterov=nesterov, adjust_lr_fn=adjust)
    topt, fopt = torch.optim.Muon(tp, **kw), optim.Muon(fp, **kw)
    for step in range(3):
        set_grads(tp, fp, step)
        topt.step()
        fopt.step()
        assert_params_close(tp, fp, rtol=0, atol=1e-4)


def quartic(params, lib):
    w, b = params
    x = lib.tensor(np.linspace(-1.0, 1.0, 4))
    return ((w @ x + b[:3] - 1.0) ** 2).sum() + 0.1 * (w**4).sum() + (b**2).sum()


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(lr=0.5, max_iter=5),
        dict(lr=1, max_iter=10, history_size=3, line_search_fn="strong_wolfe"),
        dict(lr=1, max_iter=4, line_search_fn="strong_wolfe", maximize=True),
    ],
)
def test_lbfgs_matches_torch(kwargs):
    tp, fp = pair(init_params())
    topt, fopt = torch.optim.LBFGS(tp, **kwargs), optim.LBFGS(fp, **kwargs)

    def closure(opt, params, lib):
        def run():
            opt.zero_grad()
            loss = quartic(params, lib) * (-1 if kwargs.get("maximize") else 1)
            loss.backward()
            return loss

        return run

    for _ in range(3):
        tl = topt.step(closure(topt, tp, torch))
        fl = fopt.step(closure(fopt, fp, flow))
        assert float(fl) == pytest.approx(tl.item(), rel=1e-9)
        assert_params_close(tp, fp, rtol=1e-8, atol=1e-9)
    tstate, fstate = topt.state_dict()["state"][0], fopt.state_dict()["state"][0]
    assert set(fstate) == set(tstate)
    assert fstate["func_evals"] == tstate["func_evals"] and fstate["n_iter"] == tstate["n_iter"]


def test_lbfgs_requires_a_closure_and_one_group():
    p = flow.nn.Parameter(flow.ones(2))
    with pytest.raises(RuntimeError, match="closure"):
        optim.LBFGS([p]).step()
    with pytest.raises(ValueError, match="parameter groups"):
        optim.LBFGS([{"params": [p]}, {"params": [flow.nn.Parameter(flow.ones(1))]}])
    with pytest.raises(RuntimeError, match="strong_wolfe"):
        optim.LBFGS([p], line_search_fn="armijo")


NAMES = ["SGD", "Adam", "AdamW", "Adadelta", "Adagrad", "Adamax", "ASGD", "NAdam", "RAdam",
         "RMSprop", "Rprop", "Adafactor"]  # fmt: skip
EXTRA_GROUP_KEYS = {"do_bias_correction", "master_weights"}  # OneFlow's Adam options


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_structure_and_torch_checkpoint_resume(name):
    kwargs = dict(lr=0.05, momentum=0.9) if name == "SGD" else dict(lr=0.05)
    if name == "RMSprop":
        kwargs.update(momentum=0.5, centered=True)
    tp, fp = pair(init_params())
    topt, fopt = getattr(torch.optim, name)(tp, **kwargs), getattr(optim, name)(fp, **kwargs)
    for step in range(3):
        set_grads(tp, fp, step)
        topt.step()
        fopt.step()
    tsd, fsd = topt.state_dict(), fopt.state_dict()
    assert list(fsd["state"]) == list(tsd["state"])
    for i in tsd["state"]:
        assert set(fsd["state"][i]) == set(tsd["state"][i])
    tkeys, fkeys = set(tsd["param_groups"][0]), set(fsd["param_groups"][0])
    assert fkeys - EXTRA_GROUP_KEYS == tkeys
    assert fsd["param_groups"][0]["params"] == tsd["param_groups"][0]["params"]

    # resume from torch's checkpoint (tensors carried over through numpy)
    def to_flow(v):
        return flow.tensor(v.numpy()) if isinstance(v, torch.Tensor) else v

    resumed_params = [flow.nn.Parameter(flow.tensor(t.detach().numpy())) for t in tp]
    resumed = getattr(optim, name)(resumed_params, **kwargs)
    resumed.load_state_dict(
        {
            "state": {i: {k: to_flow(v) for k, v in s.items()} for i, s in tsd["state"].items()},
            "param_groups": tsd["param_groups"],
        }
    )
    for step in range(3, 6):
        set_grads(tp, fp, step)
        resumed_params[0].grad, resumed_params[1].grad = fp[0].grad, fp[1].grad
        topt.step()
        resumed.step()
        assert_params_close(tp, resumed_params)


def test_own_state_dict_round_trip_continues_identically():
    _, fp = pair(init_params())
    opt = optim.NAdam(fp, lr=0.05)
    for step in range(2):
        for p, g in zip(fp, grad_of([p.numpy() for p in fp], step)):
            p.grad = flow.tensor(g)
        opt.step()
    clone = [flow.nn.Parameter(flow.tensor(p.numpy())) for p in fp]
    again = optim.NAdam(clone, lr=0.05)
    again.load_state_dict(opt.state_dict())
    for step in range(2, 4):
        for a, b, g in zip(fp, clone, grad_of([p.numpy() for p in fp], step)):
            a.grad, b.grad = flow.tensor(g), flow.tensor(g)
        opt.step()
        again.step()
    for a, b in zip(fp, clone):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("name", ["Adam", "RMSprop", "Adagrad", "NAdam"])
def test_float32_spot_check(name):
    tp, fp = pair(init_params(), np.float32)
    topt, fopt = getattr(torch.optim, name)(tp, lr=0.01), getattr(optim, name)(fp, lr=0.01)
    for step in range(4):
        set_grads(tp, fp, step, np.float32)
        topt.step()
        fopt.step()
    assert_params_close(tp, fp, rtol=1e-5, atol=1e-6)
    assert fp[0].dtype == flow.float32


def test_constructor_defaults_and_exports_match_torch():
    import inspect

    assert optim.__all__ == torch.optim.__all__
    for name in NAMES + ["LBFGS", "SparseAdam", "Muon"]:
        tsig = inspect.signature(getattr(torch.optim, name).__init__).parameters
        fsig = inspect.signature(getattr(optim, name).__init__).parameters
        for arg, tparam in tsig.items():
            assert arg in fsig, f"{name} lacks {arg}"
            assert fsig[arg].default == tparam.default, f"{name}.{arg}"
            assert fsig[arg].kind == tparam.kind, f"{name}.{arg}"


def test_add_param_group_named_params_zero_grad_and_hooks():
    a, b = flow.nn.Parameter(flow.ones(2)), flow.nn.Parameter(flow.ones(3))
    opt = optim.RMSprop([("a", a)], lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["a"]
    opt.add_param_group({"params": [b], "lr": 0.5})
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["alpha"] == 0.99
    calls = []
    handle = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append("pre"))
    opt.register_step_post_hook(lambda o, args, kwargs: calls.append("post"))
    a.grad, b.grad = flow.ones(2), flow.ones(3)
    opt.step()
    handle.remove()
    opt.step()
    assert calls == ["pre", "post", "post"]
    opt.zero_grad()
    assert a.grad is None and b.grad is None
    opt.zero_grad(set_to_none=False)  # (no grads: nothing to zero)


@pytest.mark.parametrize(
    "name,kwargs,match",
    [
        ("Adadelta", dict(rho=1.5), "rho"),
        ("Adagrad", dict(lr_decay=-1), "lr_decay"),
        ("Adamax", dict(betas=(1.0, 0.9)), "beta parameter at index 0"),
        ("ASGD", dict(lambd=-1), "lambd"),
        ("NAdam", dict(momentum_decay=-1), "momentum_decay"),
        ("RAdam", dict(eps=-1), "epsilon"),
        ("RMSprop", dict(alpha=-1), "alpha"),
        ("Rprop", dict(etas=(1.5, 1.2)), "eta"),
        ("Adafactor", dict(d=0.5), "Clipping threshold"),
        ("SparseAdam", dict(lr=0.0), "learning rate"),
    ],
)
def test_invalid_hyperparameters_raise_value_error(name, kwargs, match):
    with pytest.raises(ValueError, match=match):
        getattr(optim, name)([flow.nn.Parameter(flow.ones(2))], **kwargs)


def test_differentiable_is_not_supported_and_says_so():
    with pytest.raises(NotImplementedError, match="differentiable"):
        optim.Adadelta([flow.nn.Parameter(flow.ones(2))], differentiable=True)


def test_functional_api_matches_the_classes():
    _, fp = pair(init_params())
    _, ref = pair(init_params())
    opt = optim.Adam(ref, lr=0.05, amsgrad=True)
    exp_avgs = [flow.zeros_like(p) for p in fp]
    exp_avg_sqs = [flow.zeros_like(p) for p in fp]
    maxes = [flow.zeros_like(p) for p in fp]
    steps = [flow.tensor(0.0) for _ in fp]
    for step in range(3):
        grads = [flow.tensor(g) for g in grad_of([p.numpy() for p in fp], step)]
        for p, g in zip(ref, grads):
            p.grad = g
        opt.step()
        optim.functional.adam(fp, grads, exp_avgs, exp_avg_sqs, maxes, steps, amsgrad=True,
                              beta1=0.9, beta2=0.999, lr=0.05, weight_decay=0, eps=1e-8,
                              maximize=False)  # fmt: skip
    assert steps[0].item() == 3.0
    for a, b in zip(fp, ref):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


def test_swap_in_optimizer_params_and_state_restores_the_live_optimizer():
    _, fp = pair(init_params())
    opt = optim.SGD(fp, lr=0.1, momentum=0.9)
    for p in fp:
        p.grad = flow.ones_like(p)
    opt.step()
    other = {
        f"p{i}": flow.nn.Parameter(flow.zeros(s, dtype=flow.float64)) for i, s in enumerate(SHAPES)
    }
    sd = opt.state_dict()
    with optim.swap_in_optimizer_params_and_state(opt, other, sd):
        for p in other.values():
            p.grad = flow.ones_like(p)
        opt.step()
    assert opt.param_groups[0]["params"][0] is fp[0]
    # buffer 1 -> 0.9 * 1 + 1 = 1.9: the swapped-in parameter moved by lr * 1.9
    np.testing.assert_allclose(other["p1"].numpy(), -0.19 * np.ones(4))


class _TrainStep(flow.nn.Graph):
    def __init__(self, model, opt, sched):
        super().__init__()
        self.model = model
        self.add_optimizer(opt, lr_sch=sched)

    def build(self, x):
        loss = (self.model(x) ** 2).sum()
        loss.backward()
        return loss


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("NAdam", dict(lr=0.05)),
        ("RAdam", dict(lr=0.05, betas=(0.9, 0.9))),
        ("ASGD", dict(lr=0.05, t0=1, lambd=0.01)),
        ("Rprop", dict(lr=0.01)),
        ("Adafactor", dict(lr=0.05, weight_decay=0.1)),
    ],
)
def test_graph_mode_trains_as_eagerly(name, kwargs):
    # The step's host scalars are float32 graph inputs: agreement to float32 rounding.
    x = flow.tensor(np.random.default_rng(0).standard_normal((5, 4)))
    weights = []
    for graph in (False, True):
        flow.manual_seed(0)
        model = flow.nn.Linear(4, 3).to(flow.float64)
        opt = getattr(optim, name)(model.parameters(), **kwargs)
        sched = optim.lr_scheduler.ExponentialLR(opt, 0.9)
        step = _TrainStep(model, opt, sched)
        for _ in range(7):
            if graph:
                step(x)
            else:
                opt.zero_grad()
                (model(x) ** 2).sum().backward()
                opt.step()
                sched.step()
        weights.append(model.weight.numpy())
    np.testing.assert_allclose(weights[1], weights[0], rtol=1e-6, atol=1e-7)


def _functional_states(lib, params, spec):
    """Per-parameter state lists in `lib` (torch or flow): 'zeros', 'step' (0-d), 'one' (0-d 1),
    'lr' (0-d lr), 'full' (lr everywhere), 'none' (None)."""
    tensor = torch.tensor if lib is torch else flow.tensor
    out = []
    for kind in spec:
        if kind == "zeros":
            out.append([lib.zeros_like(p) for p in params])
        elif kind == "full":
            out.append([lib.zeros_like(p) + 0.01 for p in params])
        elif kind == "none":
            out.append([None for _ in params])
        else:
            value = {"step": 0.0, "one": 1.0, "lr": 0.05}[kind]
            out.append([tensor(value) for _ in params])
    return out


FUNCTIONAL = [
    ("adadelta", ["zeros", "zeros", "step"], dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.1,
                                                  maximize=False)),
    ("adagrad", ["zeros", "step"], dict(lr=0.1, weight_decay=0.0, lr_decay=0.1, eps=1e-10,
                                        maximize=True)),
    ("adamax", ["zeros", "zeros", "step"], dict(eps=1e-8, beta1=0.9, beta2=0.999, lr=0.05,
                                                weight_decay=0.1)),
    ("adamw", ["zeros", "zeros", "zeros", "step"], dict(amsgrad=True, beta1=0.9, beta2=0.99,
                                                       lr=0.05, weight_decay=0.1, eps=1e-8,
                                                       maximize=False)),
    ("asgd", ["zeros", "one", "lr", "step"], dict(lambd=1e-2, lr=0.05, t0=1, alpha=0.75,
                                                  weight_decay=0.0)),
    ("nadam", ["zeros", "zeros", "one", "step"], dict(beta1=0.9, beta2=0.999, lr=0.05,
                                                      weight_decay=0.1, momentum_decay=4e-3,
                                                      eps=1e-8)),
    ("radam", ["zeros", "zeros", "step"], dict(beta1=0.9, beta2=0.9, lr=0.05, weight_decay=0.0,
                                               eps=1e-8)),
    ("rmsprop", ["zeros", "zeros", "zeros", "step"], dict(lr=0.01, alpha=0.99, eps=1e-8,
                                                          weight_decay=0.0, momentum=0.9,
                                                          centered=True)),
    ("rprop", ["zeros", "full", "step"], dict(step_size_min=1e-6, step_size_max=50,
                                              etaminus=0.5, etaplus=1.2)),
    ("sgd", ["none"], dict(weight_decay=0.1, momentum=0.9, lr=0.1, dampening=0.0, nesterov=True,
                           maximize=False)),
]  # fmt: skip


@pytest.mark.parametrize("name,spec,kwargs", FUNCTIONAL, ids=[f[0] for f in FUNCTIONAL])
def test_functional_api_matches_torch(name, spec, kwargs):
    tp, fp = pair(init_params())
    tstates = _functional_states(torch, [p.detach() for p in tp], spec)
    fstates = _functional_states(flow, [p.detach() for p in fp], spec)
    for step in range(6):
        set_grads(tp, fp, step)
        with torch.no_grad():
            getattr(torch.optim.functional, name)(
                [p.detach() for p in tp], [p.grad for p in tp], *tstates, **kwargs
            )
        getattr(optim.functional, name)(fp, [p.grad for p in fp], *fstates, **kwargs)
        assert_params_close(tp, fp)
    for tlist, flist in zip(tstates, fstates):
        for t, f in zip(tlist, flist):
            np.testing.assert_allclose(f.numpy(), t.numpy(), rtol=1e-7, atol=1e-12)
