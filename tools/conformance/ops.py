"""The OpInfo driver: every sample of an op_db entry through torch and through oneflowlike.

Cases per sample (ids `<sample index>:<kind>`):
- `f32`, `f64`: the forward in float32 / float64, outputs compared (structure, shape, dtype,
  values within convert.TOLERANCES);
- `grad32`, `grad64`: where the entry supports autograd in that dtype, one random cotangent per
  differentiable output, the same for both, pulled back to every input that requires grad;
- `inplace32`, `inplace64`: the in-place variant on a copy of the input, which must end equal to
  torch's and be returned.
Each case is `pass`, `wrong` (what differs, largest error), `raises` (exception) or `skip` (why
the sample has no counterpart here)."""

import types

import numpy as np

from . import convert, guard, lists

KINDS = ("f32", "f64", "grad32", "grad64", "inplace32", "inplace64")
# Outputs drawn at random (or left uninitialised): only structure, shapes and dtypes compare.
RANDOM_OPS = frozenset(
    {
        "bernoulli",
        "cauchy",
        "exponential",
        "geometric",
        "log_normal",
        "normal",
        "uniform",
        "multinomial",
        "rand_like",
        "randn",
        "randn_like",
        "randint",
        "randint_like",
        "empty",
        "empty_like",
        "empty_strided",
        "empty_permuted",
        "new_empty",
        "new_empty_strided",
        "nn.functional.dropout",
        "nn.functional.dropout2d",
        "nn.functional.dropout3d",
        "nn.functional.alpha_dropout",
        "nn.functional.feature_alpha_dropout",
        "nn.functional.rrelu",
        "nn.functional.fractional_max_pool2d",
        "nn.functional.fractional_max_pool3d",
        "svd_lowrank",
        "pca_lowrank",
    }
)


# Decompositions unique only up to the sign or phase of a vector: forward outputs compare after the
# sample's output_process_fn_grad, the gauge-invariant part PyTorch's gradient tests compare.
GAUGE_OPS = frozenset({"svd", "linalg.svd", "linalg.eig", "linalg.eigh", "symeig"})


def entry_key(op):
    return f"{op.name}[{op.variant_test_name}]" if op.variant_test_name else op.name


def _from_tests(fn):
    return isinstance(fn, types.FunctionType) and fn.__module__.startswith("torch.testing")


def _ours_for(fn, name_target, flow):
    """Our counterpart of one of torch's callables: a test-database lambda rebound to flow, a
    Tensor method by name, or the name-resolved target."""
    import torch

    if _from_tests(fn):
        return convert.rebind(fn, flow)
    name = getattr(fn, "__name__", None)
    if name and getattr(torch.Tensor, name, None) is fn:
        return getattr(flow.Tensor, name, None)
    return name_target


def _inplace_for(fn, flow):
    import functools

    import torch

    if isinstance(fn, functools.partial):  # F.hardsigmoid with inplace=True, and the like
        ours, label = _inplace_for(fn.func, flow)
        if ours is None:
            return None, label
        return functools.partial(ours, *fn.args, **fn.keywords), label + "(partial)"
    if _from_tests(fn):
        return convert.rebind(fn, flow), "lambda"
    name = getattr(fn, "__name__", "?")
    for troot, root, label in (
        (torch.Tensor, flow.Tensor, "Tensor."),
        (torch, flow, "flow."),
        (torch.nn.functional, flow.nn.functional, "flow.nn.functional."),
    ):
        if getattr(troot, name, None) is fn:
            return getattr(root, name, None), label + name
    return None, name


def _detached(x):
    import torch

    if isinstance(x, torch.Tensor):
        return x.detach().clone()
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(_detached(v) for v in x)
    if isinstance(x, dict):
        return {k: _detached(v) for k, v in x.items()}
    return x


def _samples(op, dtype, requires_grad, max_samples):
    guard.seed_all(0)
    with guard.quiet():
        it = op.sample_inputs("cpu", dtype, requires_grad=requires_grad)
        out = []
        for s in it:
            out.append(s)
            if max_samples and len(out) >= max_samples:
                break
    return out


def _post(sample, expect, got, timeout):
    """The sample's output_process_fn_grad on torch's output and (rebound) on ours."""
    import oneflowlike as flow

    post = sample.output_process_fn_grad
    ours = convert.rebind(post, flow) if _from_tests(post) else post
    with guard.quiet(), guard.time_limit(timeout):
        return post(expect), ours(got)


def _forward_case(op, ours, sample, dtype, shape_only, timeout, with_grad):
    """(status, message, state for the gradient case)."""
    import oneflowlike as flow

    conv = convert.Converter(flow)
    try:
        o_in, o_args, o_kw = conv((sample.input, sample.args, sample.kwargs), keep_grad=with_grad)
    except convert.Skip as s:
        return "skip", str(s), None
    try:
        with guard.quiet(), guard.time_limit(timeout):
            expect = op.op(sample.input, *sample.args, **sample.kwargs)
    except Exception as e:
        return "skip", "torch raises: " + guard.describe(e), None
    try:
        with guard.quiet(), guard.time_limit(timeout):
            got = ours(o_in, *o_args, **o_kw)
    except Exception as e:
        return "raises", guard.describe(e), None
    if op.name in GAUGE_OPS:
        try:
            t_cmp, o_cmp = _post(sample, expect, got, timeout)
        except Exception as e:
            return "raises", "output_process_fn_grad: " + guard.describe(e), None
    else:
        t_cmp, o_cmp = expect, got
    try:
        diff = convert.compare(t_cmp, o_cmp, convert.TOLERANCES[dtype], shape_only)
    except Exception as e:
        return "wrong", "comparison failed: " + guard.describe(e), None
    return ("wrong", diff, None) if diff else ("pass", "", (expect, got, conv))


def _grad_case(op, sample, state, dtype, timeout, seed):
    import torch

    import oneflowlike as flow

    expect, got, conv = state
    leaves = conv.leaves()
    if not leaves:
        return "skip", "no input requires grad"
    try:
        t_out, o_out = map(convert.flatten, _post(sample, expect, got, timeout))
    except Exception as e:
        return "raises", "output_process_fn_grad: " + guard.describe(e)
    pos = [
        i
        for i, t in enumerate(t_out)
        if isinstance(t, torch.Tensor) and t.requires_grad and t.is_floating_point()
    ]
    if not pos:
        return "skip", "no differentiable output"
    if len(o_out) != len(t_out):
        return "wrong", f"{len(o_out)} outputs where torch gives {len(t_out)}"
    for i in pos:
        if not isinstance(o_out[i], flow.Tensor) or not o_out[i].requires_grad:
            return "wrong", f"output {i} does not require grad"
    rng = np.random.default_rng(seed)
    cots = [rng.standard_normal(tuple(t_out[i].shape)) for i in pos]
    try:
        with guard.quiet(), guard.time_limit(timeout):
            t_grads = torch.autograd.grad(
                [t_out[i] for i in pos],
                [t for t, _ in leaves],
                [torch.from_numpy(c).to(t_out[i].dtype) for c, i in zip(cots, pos)],
                allow_unused=True,
            )
    except Exception as e:
        return "skip", "torch backward raises: " + guard.describe(e)
    try:
        with guard.quiet(), guard.time_limit(timeout):
            o_grads = flow.autograd.grad(
                [o_out[i] for i in pos],
                [o for _, o in leaves],
                [flow.tensor(c).to(o_out[i].dtype) for c, i in zip(cots, pos)],
                allow_unused=True,
            )
    except Exception as e:
        return "raises", "backward: " + guard.describe(e)
    tol = convert.GRAD_TOLERANCES[dtype]
    for j, ((t, o), tg, og) in enumerate(zip(leaves, t_grads, o_grads)):
        tg = np.zeros(tuple(t.shape)) if tg is None else convert.to_numpy(tg)
        og = np.zeros(tuple(o.shape)) if og is None else convert.to_numpy(og)
        if tg.shape != og.shape:
            return "wrong", f"grad of input {j}: shape {og.shape} where torch gives {tg.shape}"
        err = convert._array_error(tg, og, tol)
        if err is not None:
            msg = err if isinstance(err, str) else f"largest error {err:.3g}"
            return "wrong", f"grad of input {j}: {msg}"
    return "pass", ""


def _inplace_case(op, ours_inplace, sample, dtype, timeout, shape_only):
    import torch

    import oneflowlike as flow

    if not isinstance(sample.input, torch.Tensor):
        return "skip", "input is not a tensor"
    t_in, t_args, t_kw = _detached((sample.input, sample.args, sample.kwargs))
    conv = convert.Converter(flow)
    try:
        o_in, o_args, o_kw = conv((t_in, t_args, t_kw), keep_grad=False)
    except convert.Skip as s:
        return "skip", str(s)
    try:
        with guard.quiet(), guard.time_limit(timeout):
            t_res = op.inplace_variant(t_in, *t_args, **t_kw)
    except Exception as e:
        return "skip", "torch raises: " + guard.describe(e)
    if ours_inplace is None:
        return "raises", "no in-place variant"
    try:
        with guard.quiet(), guard.time_limit(timeout):
            o_res = ours_inplace(o_in, *o_args, **o_kw)
    except Exception as e:
        return "raises", guard.describe(e)
    diff = convert.compare(t_in, o_in, convert.TOLERANCES[dtype], shape_only)
    if diff:
        return "wrong", "input after the call: " + diff
    if t_res is t_in and o_res is not o_in:
        return "wrong", "returns a new tensor, not its input"
    return "pass", ""


def run_entry(op, kinds=KINDS, max_samples=None, timeout=20, only=None):
    """One OpInfo entry: {key, name, target, reason, cases: {case id: [status, message]}}.
    `only`: the case ids to run (the baseline's), None for all."""
    import torch

    import oneflowlike as flow

    key = entry_key(op)
    target, where = lists.op_target(op.name)
    res = {"key": key, "name": op.name, "target": where, "reason": "", "cases": {}}
    if op.name.startswith("_"):
        res["reason"] = "private name"
        return res
    if target is None:
        res["reason"] = "missing"
        return res
    ours = _ours_for(op.op, target, flow)
    if ours is None:
        res["reason"] = "missing"
        return res
    dtypes = op.supported_dtypes("cpu")
    if not dtypes:
        res["reason"] = "no CPU dtypes (CUDA-only)"
        return res
    floats = [d for d in (torch.float32, torch.float64) if d in dtypes]
    if not floats:
        names = ", ".join(sorted(convert.dtype_name(d) for d in dtypes))
        res["reason"] = f"no float32/float64 on CPU ({names}: integer/bool samples are later work)"
        return res
    shape_only = op.name in RANDOM_OPS
    ours_inplace = None
    if op.inplace_variant is not None:
        ours_inplace, _ = _inplace_for(op.inplace_variant, flow)
    wanted = set(kinds)
    cases = res["cases"]
    if only is not None:  # no need to draw samples past the last one asked for
        last = max((int(c.split(":")[0]) for c in only), default=-1) + 1
        max_samples = min(max_samples or last, last)
        if not last:
            return res

    def want(i, kind):
        return kind in wanted and (only is None or f"{i}:{kind}" in only)

    for dtype in floats:
        dname = convert.dtype_name(dtype)
        bits = dname[-2:]
        k_fwd, k_grad, k_inp = f"f{bits}", f"grad{bits}", f"inplace{bits}"
        grad_dtype = (
            op.supports_autograd and not shape_only and dtype in op.supported_backward_dtypes("cpu")
        )
        try:
            samples = _samples(op, dtype, grad_dtype, max_samples)
        except Exception as e:
            res["reason"] = f"sample_inputs({dname}) raises: {guard.describe(e)}"
            continue
        for i, s in enumerate(samples):
            do_grad = grad_dtype and want(i, k_grad)
            if want(i, k_fwd) or do_grad:
                st, msg, state = _forward_case(op, ours, s, dname, shape_only, timeout, do_grad)
                if want(i, k_fwd):
                    cases[f"{i}:{k_fwd}"] = [st, msg]
                if do_grad:
                    # A forward that fails fails its gradient too: no gradient to compare.
                    grad = [st, "forward: " + msg] if state is None else None
                    grad = grad or list(_grad_case(op, s, state, dname, timeout, seed=i))
                    cases[f"{i}:{k_grad}"] = grad
            if op.inplace_variant is not None and want(i, k_inp):
                cases[f"{i}:{k_inp}"] = list(
                    _inplace_case(op, ours_inplace, s, dname, timeout, shape_only)
                )
    return res


def select(db, names):
    """The entries named (by OpInfo name or by key `name[variant]`), all when `names` is empty."""
    if not names:
        return list(db)
    want = set(names)
    return [op for op in db if op.name in want or entry_key(op) in want]
