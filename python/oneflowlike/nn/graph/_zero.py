"""config.enable_zero as layouts: ZeRO's stages are SBP choices for the optimizer states,
gradients and parameters of a data-parallel graph; boxing inserts the collectives (the states'
slicing, the gradients' reduce-scatter, the parameters' all-gather)."""

import math

import oneflowlike as flow

from ._warnings import warn_once as _warn_once


def _data_parallel_axes(args):
    """{placement string: mesh axes some global input is split over}: the data-parallel axes."""
    axes = {}
    for a in args:
        if isinstance(a, flow.Tensor) and a.is_global:
            split = {k for k, s in enumerate(a.sbp) if s.kind == "split"}
            axes.setdefault(str(a.placement), set()).update(split)
    return axes


def sharded_layouts(graph, args):
    """{id(param): its ZeRO layout} for the graph's optimized parameters that ZeRO shards: a
    global parameter on the inputs' placement, broadcast over a data-parallel axis, takes S(0)
    there (its other axes kept), when each shard keeps at least shard_min_size elements.
    Parameters already split there (stage 3 after its first call) count as sharded."""
    config = graph.config
    axes_of = _data_parallel_axes(args)
    out = {}
    for opt, _ in graph._optimizers:
        for group in opt.param_groups:
            for p in group["params"]:
                axes = axes_of.get(str(p.placement)) if p.is_global else None
                if not axes or not p.requires_grad or p.dim() == 0:
                    continue
                sbp = list(p.sbp)
                hierarchy = list(p.placement.hierarchy)
                shard = [k for k in sorted(axes) if sbp[k].kind == "broadcast"]
                done = [k for k in sorted(axes) if sbp[k] == flow.sbp.split(0)]
                if not shard and not done:
                    continue
                ways = math.prod(hierarchy[k] for k in shard + done)
                if shard and math.prod(p.shape) // ways < config.zero_shard_min_size:
                    continue
                for k in shard:
                    sbp[k] = flow.sbp.split(0)
                out[id(p)] = tuple(sbp)
    return out


def apply(graph, args):
    """Lays out the states (stage >= 1) and parameters (stage 3) ZeRO shards, in place, before
    the graph traces; returns sharded_layouts' {id(param): layout} (where stage 2 boxes the
    gradients), {} when ZeRO is off or has nothing to shard."""
    if not graph.config.zero_stage or not graph._optimizers:
        return {}
    if not any(a.is_global for a in args):
        _warn_once("enable_zero on local inputs: one device, nothing to shard (ignored)")
        return {}
    if graph.config.auto_parallel:
        _warn_once("enable_zero with enable_auto_parallel: the planner lays out the states")
        return {}
    stage = graph.config.zero_stage
    layouts = sharded_layouts(graph, args)
    with flow.no_grad():
        for opt, _ in graph._optimizers:
            for group in opt.param_groups:
                for p in group["params"]:
                    layout = layouts.get(id(p))
                    if layout is None:
                        continue
                    if stage == 3 and tuple(p.sbp) != layout:
                        p.data = p.detach().to_global(p.placement, layout)
                    for value in opt._state_of(group, p).values():
                        if (
                            isinstance(value, flow.Tensor)
                            and value.is_global
                            and tuple(value.shape) == tuple(p.shape)
                            and tuple(value.sbp) != layout
                        ):
                            value.data = value.detach().to_global(p.placement, layout)
    return layouts


def boxed_grad(trace, p, sharded):
    """A global parameter's traced gradient in the parameter's layout (a param_grad boxing node,
    which bucketing fuses), or in its ZeRO-2 layout (`sharded`: id(parameter) -> layout)."""
    layout = sharded.get(id(p))
    if layout is None:
        return trace.box_grad(p, p.grad)
    return trace.box_grad(p, p.grad, flow._C.NdSbp(list(layout)))
