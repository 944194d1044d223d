"""The ModuleInfo driver: every ModuleInput of `common_modules.module_db`, in float64 and training
mode, through torch's module and ours of the same class name with torch's state_dict copied in.

Cases per module input (ids `<input index>:<kind>`):
- `fwd`: constructor arguments accepted, state_dict keys equal, forward outputs equal, and the
  state after the forward (BatchNorm's running statistics) equal;
- `grad`: one random cotangent per differentiable output, the same for both, pulled back to every
  parameter (by name) and every input that requires grad."""

import numpy as np

from . import convert, guard

KINDS = ("fwd", "grad")
# Modules whose output is drawn at random: only structure, shapes and dtypes compare.
RANDOM_MODULES = frozenset(
    {"FractionalMaxPool2d", "FractionalMaxPool3d", "RReLU", "Dropout", "AlphaDropout"}
)


def module_db():
    from torch.testing._internal.common_modules import module_db as db

    return db


def entry_key(mi):
    return mi.name


def _build(mi, ours_cls, mod_input, timeout):
    """(torch module, our module, converter) with torch's state copied into ours; raises
    convert.Skip where torch itself refuses."""
    import torch

    import oneflowlike as flow

    c = mod_input.constructor_input
    guard.seed_all(0)
    try:
        with guard.quiet(), guard.time_limit(timeout):
            t_m = mi.module_cls(*c.args, **c.kwargs).to(torch.float64)
    except Exception as e:
        raise convert.Skip("torch's constructor raises: " + guard.describe(e))
    conv = convert.Converter(flow)
    o_args, o_kwargs = conv((c.args, c.kwargs), keep_grad=False)
    with guard.quiet(), guard.time_limit(timeout):
        o_m = ours_cls(*o_args, **o_kwargs).to(flow.float64)
    t_m.train()
    o_m.train()
    return t_m, o_m


def _state_diff(t_m, o_m):
    t_keys, o_keys = set(t_m.state_dict()), set(o_m.state_dict())
    if t_keys == o_keys:
        return None
    parts = []
    if t_keys - o_keys:
        parts.append("lacks " + ", ".join(sorted(t_keys - o_keys)))
    if o_keys - t_keys:
        parts.append("has extra " + ", ".join(sorted(o_keys - t_keys)))
    return "state_dict " + "; ".join(parts)


def _copy_state(t_m, o_m):
    import oneflowlike as flow

    o_m.load_state_dict({k: flow.tensor(convert.to_numpy(v)) for k, v in t_m.state_dict().items()})


def _case(mi, ours_cls, mod_input, timeout, seed, do_grad):
    """{kind: [status, message]} for one ModuleInput."""
    import torch

    import oneflowlike as flow

    out = {}

    def both(status, msg):
        out["fwd"] = [status, msg]
        if do_grad:
            out["grad"] = [status, "forward: " + msg]
        return out

    try:
        t_m, o_m = _build(mi, ours_cls, mod_input, timeout)
    except convert.Skip as s:
        return both("skip", str(s))
    except Exception as e:
        return both("raises", "constructor: " + guard.describe(e))
    f = mod_input.forward_input
    conv = convert.Converter(flow)
    try:
        o_args, o_kwargs = conv((f.args, f.kwargs), keep_grad=True)
    except convert.Skip as s:
        return both("skip", str(s))
    try:
        if mi.is_lazy:  # materialise both before copying the weights
            with guard.quiet(), torch.no_grad(), guard.time_limit(timeout):
                t_m(*f.args, **f.kwargs)
                o_m(*convert.Converter(flow)((f.args, f.kwargs), keep_grad=False)[0])
        diff = _state_diff(t_m, o_m)
        if diff:
            return both("wrong", diff)
        _copy_state(t_m, o_m)
    except Exception as e:
        return both("raises", "state: " + guard.describe(e))
    try:
        with guard.quiet(), guard.time_limit(timeout):
            t_out = t_m(*f.args, **f.kwargs)
    except Exception as e:
        return both("skip", "torch's forward raises: " + guard.describe(e))
    try:
        with guard.quiet(), guard.time_limit(timeout):
            o_out = o_m(*o_args, **o_kwargs)
    except Exception as e:
        return both("raises", guard.describe(e))
    shape_only = mi.module_cls.__name__ in RANDOM_MODULES
    diff = convert.compare(t_out, o_out, convert.TOLERANCES["float64"], shape_only)
    if not diff and not shape_only:
        t_sd, o_sd = t_m.state_dict(), o_m.state_dict()
        for k in t_sd:
            d = convert.compare(t_sd[k], o_sd[k], convert.TOLERANCES["float64"])
            if d:
                diff = f"{k} after the forward: {d}"
                break
    if diff:
        return both("wrong", diff)
    out["fwd"] = ["pass", ""]
    if do_grad:
        out["grad"] = list(_grad(t_m, o_m, t_out, o_out, conv, timeout, seed, shape_only))
    return out


def _grad(t_m, o_m, t_out, o_out, conv, timeout, seed, shape_only):
    import torch

    import oneflowlike as flow

    if shape_only:
        return "skip", "random output"
    t_flat, o_flat = convert.flatten(t_out), convert.flatten(o_out)
    pos = [
        i
        for i, t in enumerate(t_flat)
        if isinstance(t, torch.Tensor) and t.requires_grad and t.is_floating_point()
    ]
    if not pos:
        return "skip", "no differentiable output"
    for i in pos:
        if not isinstance(o_flat[i], flow.Tensor) or not o_flat[i].requires_grad:
            return "wrong", f"output {i} does not require grad"
    o_params = dict(o_m.named_parameters())
    names = [n for n, p in t_m.named_parameters() if p.requires_grad and n in o_params]
    t_leaves = [dict(t_m.named_parameters())[n] for n in names] + [t for t, _ in conv.leaves()]
    o_leaves = [o_params[n] for n in names] + [o for _, o in conv.leaves()]
    labels = names + [f"input {j}" for j in range(len(conv.leaves()))]
    rng = np.random.default_rng(seed)
    cots = [rng.standard_normal(tuple(t_flat[i].shape)) for i in pos]
    try:
        with guard.quiet(), guard.time_limit(timeout):
            t_grads = torch.autograd.grad(
                [t_flat[i] for i in pos],
                t_leaves,
                [torch.from_numpy(c).to(t_flat[i].dtype) for c, i in zip(cots, pos)],
                allow_unused=True,
            )
    except Exception as e:
        return "skip", "torch's backward raises: " + guard.describe(e)
    try:
        with guard.quiet(), guard.time_limit(timeout):
            o_grads = flow.autograd.grad(
                [o_flat[i] for i in pos],
                o_leaves,
                [flow.tensor(c).to(o_flat[i].dtype) for c, i in zip(cots, pos)],
                allow_unused=True,
            )
    except Exception as e:
        return "raises", "backward: " + guard.describe(e)
    tol = convert.GRAD_TOLERANCES["float64"]
    for label, t, tg, og in zip(labels, t_leaves, t_grads, o_grads):
        tg = np.zeros(tuple(t.shape)) if tg is None else convert.to_numpy(tg)
        og = np.zeros(tg.shape) if og is None else convert.to_numpy(og)
        if tg.shape != og.shape:
            return "wrong", f"grad of {label}: shape {og.shape} where torch gives {tg.shape}"
        err = convert._array_error(tg, og, tol)
        if err is not None:
            return "wrong", f"grad of {label}: " + (
                err if isinstance(err, str) else f"largest error {err:.3g}"
            )
    return "pass", ""


def run_entry(mi, kinds=KINDS, timeout=20, only=None, max_inputs=None):
    import torch

    import oneflowlike as flow

    name = mi.module_cls.__name__
    res = {"key": entry_key(mi), "name": name, "target": "flow.nn." + name, "reason": ""}
    res["cases"] = cases = {}
    ours_cls = getattr(flow.nn, name, None)
    if ours_cls is None:
        res["reason"] = "missing"
        return res
    if torch.float64 not in mi.supported_dtypes("cpu"):
        res["reason"] = "no float64 on CPU"
        return res
    if only is not None:
        last = max((int(c.split(":")[0]) for c in only), default=-1) + 1
        max_inputs = min(max_inputs or last, last)
    guard.seed_all(0)
    try:
        with guard.quiet():
            inputs = list(
                mi.module_inputs_func(
                    mi, device="cpu", dtype=torch.float64, requires_grad=True, training=True
                )
            )
    except Exception as e:
        res["reason"] = "module_inputs_func raises: " + guard.describe(e)
        return res
    for i, mod_input in enumerate(inputs[:max_inputs]):
        ids = {k: f"{i}:{k}" for k in kinds if only is None or f"{i}:{k}" in only}
        if not ids:
            continue
        got = _case(mi, ours_cls, mod_input, timeout, seed=i, do_grad="grad" in ids)
        for k, cid in ids.items():
            cases[cid] = got[k]
    return res


def select(db, names):
    if not names:
        return list(db)
    want = set(names)
    return [m for m in db if m.name in want or m.module_cls.__name__ in want]
