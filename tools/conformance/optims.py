"""The OptimizerInfo driver: every OptimizerInput of `common_optimizers.optim_db` (constructor
keyword arguments) runs a few steps of torch's optimizer and ours on the same tiny float64 problem;
the parameters must agree after every step.

One case per optimizer input (`<input index>:steps`). The problem: two 2-d weights (Muon takes
only matrices), loss `sum(tanh(x W1^T) W2^T)^2`, gradients from each framework's autograd."""

import inspect

import numpy as np

from . import convert, guard

STEPS = 3
# Switches of torch's implementation, not of the math: passed on only where our constructor
# takes them, and samples that turn on a CUDA-only one are skipped.
_IMPL_FLAGS = ("foreach", "fused", "capturable", "differentiable")


def optim_db():
    from torch.testing._internal.common_optimizers import optim_db as db

    return db


def entry_key(oi):
    return oi.name if hasattr(oi, "name") and oi.name else oi.optim_cls.__name__


def _problem(lib, tensor):
    rng = np.random.default_rng(0)
    x = tensor(rng.standard_normal((5, 3)))
    w1 = tensor(rng.standard_normal((4, 3)) * 0.5)
    w2 = tensor(rng.standard_normal((2, 4)) * 0.5)
    w1.requires_grad_(True)
    w2.requires_grad_(True)

    def loss_fn():
        return ((lib.tanh(x @ w1.T) @ w2.T) ** 2).sum()

    return [w1, w2], loss_fn


def _kwargs_for_ours(kwargs, ours_cls, conv):
    params = inspect.signature(ours_cls.__init__).parameters
    takes_any = any(p.kind == p.VAR_KEYWORD for p in params.values())
    out = {}
    for k, v in kwargs.items():
        if k in _IMPL_FLAGS and k not in params and not takes_any:
            if v and k in ("fused", "capturable", "differentiable"):
                raise convert.Skip(f"{k}={v} (a torch implementation switch)")
            continue
        out[k] = conv(v, keep_grad=False)
    return out


def _run_steps(lib, tensor, opt_cls, kwargs, closure_step):
    params, loss_fn = _problem(lib, tensor)
    opt = opt_cls(params, **kwargs)
    history = []
    for _ in range(STEPS):

        def closure():
            opt.zero_grad()
            loss = loss_fn()
            loss.backward()
            return loss

        if closure_step:
            opt.step(closure)
        else:
            closure()
            opt.step()
        history.append([convert.to_numpy(p) for p in params])
    return history


def _case(oi, ours_cls, opt_input, timeout):
    import torch

    import oneflowlike as flow

    if opt_input.params is not None:
        return "skip", "sample brings its own params"
    conv = convert.Converter(flow)
    try:
        o_kwargs = _kwargs_for_ours(opt_input.kwargs, ours_cls, conv)
    except convert.Skip as s:
        return "skip", str(s)
    closure_step = bool(oi.step_requires_closure)
    try:
        with guard.quiet(), guard.time_limit(timeout):
            t_hist = _run_steps(torch, torch.tensor, oi.optim_cls, opt_input.kwargs, closure_step)
    except Exception as e:
        return "skip", "torch raises: " + guard.describe(e)
    try:
        with guard.quiet(), guard.time_limit(timeout):
            o_hist = _run_steps(flow, flow.tensor, ours_cls, o_kwargs, closure_step)
    except Exception as e:
        return "raises", guard.describe(e)
    tol = convert.GRAD_TOLERANCES["float64"]
    for step, (t_ps, o_ps) in enumerate(zip(t_hist, o_hist)):
        for j, (tp, op) in enumerate(zip(t_ps, o_ps)):
            err = convert._array_error(tp, op, tol)
            if err is not None:
                msg = err if isinstance(err, str) else f"largest error {err:.3g}"
                return "wrong", f"step {step + 1}, param {j}: {msg}"
    return "pass", ""


def run_entry(oi, timeout=20, only=None):
    import oneflowlike as flow

    name = oi.optim_cls.__name__
    res = {"key": entry_key(oi), "name": name, "target": "flow.optim." + name, "reason": ""}
    res["cases"] = cases = {}
    ours_cls = getattr(flow.optim, name, None)
    if ours_cls is None:
        res["reason"] = "missing"
        return res
    if oi.only_supports_sparse_grads:
        res["reason"] = "sparse gradients only"
        return res
    try:
        with guard.quiet():
            inputs = list(oi.optim_inputs_func(device="cpu"))
    except Exception as e:
        res["reason"] = "optim_inputs_func raises: " + guard.describe(e)
        return res
    for i, opt_input in enumerate(inputs):
        cid = f"{i}:steps"
        if only is None or cid in only:
            st, msg = _case(oi, ours_cls, opt_input, timeout)
            cases[cid] = [st, f"{opt_input.desc}: {msg}" if msg else ""]
    return res


def select(db, names):
    if not names:
        return list(db)
    want = set(names)
    return [o for o in db if entry_key(o) in want or o.optim_cls.__name__ in want]
