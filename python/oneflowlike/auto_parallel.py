"""flow.auto_parallel: the planner chooses every SBP of a training step (DESIGN.md, "The planner").

    plan = flow.auto_parallel.plan(graph, (x, y), memory_budget=2 << 30)
    print(plan.explain())        # the variables' layouts, the ops' signatures, predicted time
    plan.apply(model)            # reshards the parameters to the chosen layouts

`graph` is an nn.Graph (with its optimizers, so the plan covers forward, backward and update).
The example inputs are global tensors: their placement is the plan's, their SBPs are kept
(annotations), and meta tensors on a simulated placement plan for a cluster this machine is not
(DESIGN.md: 1024 ranks in one process). Everything else is chosen exactly under the cost model:
each op's signature and each parameter's and optimizer state's layout, with every parameter's
gradient in its parameter's layout, within the per-device memory budget."""

import math
import os

import oneflowlike as flow
from oneflowlike import _C, _global


class Plan:
    """The planner's choice: `layouts` maps each parameter (by its module name) and optimizer state
    ("state:<parameter>.<key>") to its SBP; `signatures` lists each global op's signature in step
    order; predicted `compute_seconds`, `comm_seconds` and `seconds` per step, and
    `lower_bound_seconds` (no plan is faster); `memory_bytes` per device for variables, gradients
    and the activations the backward reads (unless planned with activations=False)."""

    def __init__(self, result, names, placement):
        self._result = result
        self._names = names
        self.placement = placement
        self.layouts = {}
        self.bytes_per_device = {}
        self._ids = {}
        self._state_names = {i: n for i, n in names.items() if n.startswith("state:")}
        for tensor, sbp, value, nbytes in result.layouts():
            name = names.get(_C._impl_id(tensor), f"%{value}")
            self.layouts[name] = tuple(sbp)
            self.bytes_per_device[name] = nbytes
            self._ids[value] = name
        self.signatures = result.signatures()
        self.compute_seconds = result.compute_seconds
        self.comm_seconds = result.comm_seconds
        self.seconds = result.seconds
        # No plan is predicted faster: `seconds`, but on the largest problems, where the solver
        # stops once it has proven its plan within 0.1% of the optimum (or after 50 nodes of its
        # search under a budget).
        self.lower_bound_seconds = result.lower_bound_seconds
        self.memory_bytes = result.memory_bytes
        self.activations = result.activations  # whether memory_bytes counts them
        # The compiled step's predicted peak per device: the budget bounds memory_bytes, and the
        # step's transients come on top (0 when not computed: no budget, or no activations).
        self.peak_bytes = result.peak_bytes
        # (repeated layers found, those solved as copies of an earlier one)
        self.repeated_layers = result.repeated_layers

    def explain(self):
        """A readable table: layouts, signatures counted by op, predicted time and memory."""
        return self._result.explain(self._ids)

    def plot(self, path):
        """Writes a figure to `path` (any format matplotlib writes): each parameter's layout and
        bytes per device, layer by layer, and the device's memory split into parameters,
        optimizer states and constants."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        def label(sbp):
            return ", ".join(s.to_string() for s in sbp)

        params = [n for n in self.layouts if not n.startswith(("state:", "%"))]
        kinds = sorted({label(self.layouts[n]) for n in params})
        colors = {k: plt.cm.tab10(i % 10) for i, k in enumerate(kinds)}
        fig, (left, right) = plt.subplots(
            1, 2, figsize=(12, max(4, 0.22 * len(params))), width_ratios=[3, 1]
        )
        y = range(len(params))
        left.barh(
            y,
            [self.bytes_per_device[n] / 1024 for n in params],
            color=[colors[label(self.layouts[n])] for n in params],
        )
        left.set_yticks(list(y), params, fontsize=7)
        left.invert_yaxis()
        left.set_xlabel("KiB per device")
        left.set_title("each parameter's layout")
        left.legend(
            handles=[plt.Rectangle((0, 0), 1, 1, color=colors[k]) for k in kinds],
            labels=kinds,
            title="SBP",
            loc="lower right",
        )
        parts = {
            "parameters": sum(self.bytes_per_device[n] for n in params),
            "optimizer states": sum(
                b for n, b in self.bytes_per_device.items() if n.startswith("state:")
            ),
            "constants": sum(b for n, b in self.bytes_per_device.items() if n.startswith("%")),
        }
        held = "gradients and activations" if self.activations else "gradients"
        parts[held] = max(self.memory_bytes - sum(parts.values()), 0)
        bottom = 0.0
        for name, nbytes in parts.items():
            right.bar(0, nbytes / (1 << 20), bottom=bottom, label=name)
            bottom += nbytes / (1 << 20)
        right.set_xticks([])
        right.set_ylabel("MiB per device")
        right.set_title(f"memory per device\n{self.memory_bytes / (1 << 20):.2f} MiB in all")
        right.legend(fontsize=8)
        fig.suptitle(
            f"plan: {self.seconds * 1e3:.2f} ms per step predicted "
            f"({self.compute_seconds * 1e3:.2f} compute, {self.comm_seconds * 1e3:.2f} communication)"
        )
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)
        return path

    def apply(self, module):
        """Reshards `module`'s parameters to the plan's layouts, in place (the Parameter objects
        an optimizer holds stay the same)."""
        with flow.no_grad():
            for name, p in module.named_parameters():
                if name in self.layouts and tuple(p.sbp) != self.layouts[name]:
                    p.data = p.detach().to_global(self.placement, self.layouts[name])
        return module

    def apply_states(self, optimizer):
        """Reshards `optimizer`'s states to the plan's layouts, in place."""
        with flow.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    for key, value in optimizer.state.get(p, {}).items():
                        if not isinstance(value, flow.Tensor):
                            continue  # a step count
                        name = self._state_names.get(_C._impl_id(value))
                        if name in self.layouts and tuple(value.sbp) != self.layouts[name]:
                            value.data = value.detach().to_global(
                                self.placement, self.layouts[name]
                            )

    def __repr__(self):
        return (
            f"Plan({len(self.layouts)} variables, {len(self.signatures)} ops; predicted "
            f"{self.seconds * 1e3:.3f} ms per step, {self.memory_bytes / (1 << 20):.2f} MB per "
            "device)"
        )


def _variables(graph):
    """{impl id: (name, tensor)} of every parameter ("blocks.0.attn.query.weight") and optimizer
    state ("state:blocks.0.attn.query.weight.exp_avg") of the step."""
    out = {}
    for module in vars(graph).values():
        if hasattr(module, "named_parameters"):
            for name, p in module.named_parameters():
                out[_C._impl_id(p)] = (name, p)
    for opt, _ in graph._optimizers:
        for group in opt.param_groups:
            for p in group["params"]:
                owner = out.get(_C._impl_id(p), ("?",))[0]
                for key, value in opt.state.get(p, {}).items():
                    if isinstance(value, flow.Tensor):
                        out[_C._impl_id(value)] = (f"state:{owner}.{key}", value)
    return out


def _kept(keep, variables):
    """The tensors whose layouts `keep` (plan's argument) fixes."""
    if keep is None or keep is False:
        return []
    if keep is True:
        return [t for _, t in variables.values()]
    if keep == "parameters":  # the optimizer states' layouts planned: ZeRO where memory binds
        return [t for name, t in variables.values() if not name.startswith("state:")]
    if isinstance(keep, str):
        raise ValueError(
            f'[auto_parallel] keep={keep!r}: give True, "parameters" or a list of names or tensors'
        )
    by_name = {name: t for name, t in variables.values()}
    out = []
    for k in keep:
        if isinstance(k, str):
            if k not in by_name:
                raise ValueError(
                    f"[auto_parallel] keep names {k!r}, which is no parameter or optimizer state "
                    f"of the step (e.g. {', '.join(sorted(by_name)[:3])})"
                )
            out.append(by_name[k])
        elif isinstance(k, flow.Tensor) and _C._impl_id(k) in variables:
            out.append(k)
        else:
            raise ValueError(f"[auto_parallel] keep: {k!r} is no parameter of the step")
    return out


# The conversions' prices by cluster (its JSON), kept across calls: a plan prices each layout
# conversion of its step once, and calls on one cluster (budgets weighed in turn, the stage sizes
# of plan_pipeline, a hand layout and a planned one) price the same ones again. The last few
# clusters' are kept.
_CACHES = {}
_CACHES_KEPT = 4


def _plan_cache(cluster):
    key = cluster.to_json()
    cache = _CACHES.pop(key, None) or _C.PlanCache(cluster)
    _CACHES[key] = cache  # the most recent last
    while len(_CACHES) > _CACHES_KEPT:
        del _CACHES[next(iter(_CACHES))]
    return cache


def plan(
    graph,
    example_inputs,
    cluster=None,
    memory_budget=None,
    keep=None,
    activations=True,
    update_weight=1.0,
    in_place=False,
):
    """Plans `graph`'s step for `example_inputs`: an nn.Graph (its optimizers' updates included),
    or a bare Module (its forward alone, as for inference). cluster: the ClusterSpec to price with
    (default: the one global ops use, flow.boxing.get_cluster_spec()); memory_budget: bytes per
    device (default: the cluster's device capacity); keep: parameters that keep their current
    layouts (constraints), by name or as tensors, True for every parameter and optimizer state
    (the ops' signatures are still chosen: what a hand layout costs), or "parameters" for every
    parameter, the optimizer states' layouts planned (sharded over the data-parallel ranks where
    memory binds: ZeRO stage 1 beside a hand layout); in_place: the kept
    parameters are also computed with as they are stored, with no conversion between one (or a
    view or cast of one) and the ops that read it (Megatron's tensor parallelism priced as it
    runs; without it a kept weight may be gathered for the compute, FSDP-like); activations: whether the
    forward's outputs that the backward reads count against the budget, in their ops' layouts
    (all live when the forward ends: a bound on the step's peak); update_weight: how much the
    step's once-a-step part (gradient reductions, optimizer) weighs against the rest, 1/m for one
    of m micro-batches sharing an update (`seconds` is then that weighted sum). Raises when no
    plan fits, naming the least memory any plan needs."""
    inputs = list(example_inputs)
    placements = {str(t.placement) for t in inputs if t.is_global}
    if not placements:
        raise ValueError("[auto_parallel] the example inputs must be global tensors")
    if len(placements) > 1:
        raise ValueError(
            f"[auto_parallel] the example inputs are on several placements: {placements}"
        )
    if not isinstance(graph, flow.nn.Graph):
        if not isinstance(graph, flow.nn.Module):
            raise TypeError(
                f"[auto_parallel] plans an nn.Graph or an nn.Module, got {type(graph).__name__}"
            )
        graph = flow.nn.graph.graph.ForwardOnly(graph)
    cluster = cluster if cluster is not None else _C.get_cluster_spec()
    budget = memory_budget if memory_budget is not None else cluster.mem_capacity
    traced = _Traced(graph, inputs, keep, in_place)
    return traced.plan(cluster, budget, activations, update_weight, _plan_cache(cluster))


class _Traced:
    """A step traced for the planner (in this thread: tracing is Python), to plan from any
    thread as often as wanted: the C++ planner runs without the GIL."""

    def __init__(self, graph, inputs, keep, in_place=False):
        if in_place and (keep is None or keep is False):
            raise ValueError(
                "[auto_parallel] in_place=True reads kept parameters as stored: name them with "
                "keep= (or keep=True for all)"
            )
        self.traced, _, _ = graph._trace(inputs, finish="finish_traced")
        self.in_place = bool(in_place)
        variables = _variables(graph)
        self.names = {i: name for i, (name, _) in variables.items()}
        self.kept = _kept(keep, variables)
        self.all_kept = _kept(True, variables)
        # Replicated everywhere as given: nothing the planner's own search lacks.
        self.replicated = all(
            all(sbp == flow.sbp.broadcast for sbp in t.sbp)
            for _, t in variables.values()
            if t.is_global
        )
        self.placement = next(t.placement for t in inputs if t.is_global)

    def plan(self, cluster, budget, activations, update_weight, cache):
        result = _C.auto_parallel_plan(
            self.traced, cluster, float(budget) if budget else math.inf, self.kept, self.names,
            activations, update_weight, cache, self.in_place,
        )  # fmt: skip
        return Plan(result, self.names, self.placement)


class PipelinePlan:
    """The planner's pipeline (plan_pipeline): `stages` of `devices_per_stage` devices each,
    `micro_batches` per step, `chunks` virtual stages a device (1: 1F1B; more: the interleaved
    schedule, virtual stage c on stage c % stages's devices), `recompute` (activations
    recomputed in the backward), `first_layer` per virtual stage (row 0 is what comes before the
    repeated layers, rows 1..L the layers, row L + 1 what comes after), the predicted step `seconds`, each stage's
    `stage_seconds` (forward and backward of one micro-batch) and `stage_bytes` per device, and
    `intra`: the intra-op Plan of a stage (the layouts and signatures inside it). `options`: the
    (devices per stage, micro-batches) of every option the search weighed, one per stage layout
    planned, and `option_seconds` the least step each predicts alone within the budget (inf:
    nothing fits)."""

    def __init__(self, found, intra, layers, device_type):
        self.stages = found["stages"]
        self.devices_per_stage = found["devices_per_stage"]
        self.micro_batches = found["micro_batches"]
        self.chunks = found["chunks"]
        self.recompute = found["recompute"]
        self.first_layer = list(found["first_layer"])
        self.stage_seconds = list(found["stage_seconds"])
        self.stage_bytes = list(found["stage_bytes"])
        self.seconds = found["seconds"]
        self.description = found["description"]
        self.options = list(found["options"])
        self.option_seconds = list(found["option_seconds"])
        self.intra = intra
        self.layers = layers
        self.device_type = device_type

    def stage_layers(self):
        """Each (virtual) stage's repeated layers, as index ranges (the first and last also run
        what comes before and after them)."""
        rows = self.first_layer + [self.layers + 2]
        return [
            range(max(rows[s] - 1, 0), min(rows[s + 1] - 1, self.layers))
            for s in range(len(self.first_layer))
        ]

    def stage_of_row(self, row):
        """The (virtual) stage running row `row` (0: before the layers, 1..L: layer row - 1,
        L + 1: after); it runs on placements()[stage % stages]."""
        return max(s for s in range(len(self.first_layer)) if self.first_layer[s] <= row)

    def placements(self, cluster=None):
        """Each stage's placement on the plan's device type: stage s on ranks s*d .. (s+1)*d - 1,
        shaped as stage_placement(d, cluster) (default: flow.boxing.get_cluster_spec()). Inputs
        given on the first stage's and targets on the last's need no moving."""
        cluster = cluster if cluster is not None else _C.get_cluster_spec()
        d = self.devices_per_stage
        return [
            stage_placement(d, cluster, s * d, device_type=self.device_type)
            for s in range(self.stages)
        ]

    def apply(self, model, layers, before, after, cluster):
        """Lays `model` out as the plan says, in place: each parameter in the intra-op plan's
        layout (a layer's as the first traced layer's: the name with `layers`' index 0), each of
        `layers` (the repeated layers, a ModuleList of model) in its stage (GraphModule.set_stage),
        the modules in `before` in the first stage and those in `after` in the last,
        recomputation on every layer if chosen. The Parameter objects stay (an optimizer holding
        them goes on). With chunks > 1 each virtual stage goes on its device's placement, and the
        graph needs config.set_pipeline_schedule("interleaved_1f1b"). Returns the first and last
        stages' placements (where the inputs and the targets go)."""
        GraphModule = flow.nn.graph.GraphModule
        prefix = next(n for n, m in model.named_modules() if m is layers) + "."
        layouts = self.intra.layouts

        def layout(name, p):
            if name.startswith(prefix):
                _, rest = name[len(prefix) :].split(".", 1)
                name = f"{prefix}0.{rest}"
            return layouts.get(name, tuple([flow.sbp.broadcast] * len(places[0].hierarchy)))

        places = self.placements(cluster)

        def placed(name, t):
            sbp = layout(name, t)
            if t.is_global:
                return t.to_global(places[0], sbp)
            return _global.from_full(t, places[0], sbp, sync_data=True)

        with flow.no_grad():
            for name, p in model.named_parameters():
                p.data = placed(name, p.detach())
            for prefix, m in model.named_modules():
                for key, b in m._buffers.items():
                    if b is not None:
                        m._buffers[key] = placed(f"{prefix}.{key}" if prefix else key, b)
        for k, layer in enumerate(layers):
            s = self.stage_of_row(k + 1)
            layer.to(GraphModule).set_stage(s, places[s % self.stages])
            layer.to(GraphModule).activation_checkpointing = self.recompute
        for m in before:
            m.to(GraphModule).set_stage(0, places[0])
        for m in after:
            m.to(GraphModule).set_stage(len(self.first_layer) - 1, places[-1])
        return places[0], places[-1]

    def explain(self):
        lines = [f"pipeline: {self.description}"]
        ranges = self.stage_layers()
        for s, (t, b) in enumerate(zip(self.stage_seconds, self.stage_bytes)):
            mine = ranges[s :: self.stages]
            extra = (" + what comes before them" if s == 0 else "") + (
                " + what comes after" if s == self.stages - 1 else ""
            )
            layers = ", ".join(f"{r.start}..{r.stop - 1}" for r in mine)
            lines.append(
                f"  stage {s}: layers {layers}{extra}: {t * 1e3:.3f} ms per "
                f"micro-batch, {b / 1e9:.3f} GB per device"
            )
        lines.append(f"predicted step: {self.seconds * 1e3:.3f} ms")
        return "\n".join(lines)

    def __repr__(self):
        return f"PipelinePlan({self.description}; {self.seconds * 1e3:.3f} ms per step)"


def stage_placement(devices, cluster, first=0, device_type="cpu"):
    """The placement of one stage of `devices` devices on `cluster` (ranks first .. first +
    devices - 1): a (nodes, devices per node) mesh once it spans nodes, else a line."""
    return _C.stage_placement(device_type, devices, cluster, first)


def plan_pipeline(
    step_for,
    layers,
    devices,
    cluster=None,
    memory_budget=None,
    stage_devices=None,
    micro_batches=(1, 2, 4, 8),
    keep=None,
    device_type="cpu",
    save=None,
    recompute=None,
    chunks=(1,),
    in_place=False,
    given=False,
):
    """Chooses the pipeline of a model of `layers` repeated layers on `devices` devices: the
    number of stages (each on devices / stages devices), which layers each runs, the micro-batch
    count and whether to recompute activations, and inside a stage every SBP (plan()), the step
    least in predicted time within `memory_budget` bytes per device.

    step_for(placement, micro_batches) -> (nn.Graph, example inputs of one micro-batch): the
    training step of the model on one stage's placement (stage_placement(d, cluster,
    device_type=device_type)), as the micro-batches of a step of `micro_batches` cut it. Its
    model may hold any number (>= 2) of the repeated layers: each one's costs are per layer,
    priced once and used `layers` times.

    Every stage size (stage_devices, default every power of two dividing `devices` that leaves
    no more stages than layers) and micro-batch count is traced here; the search is C++'s
    (_C.search_pipeline, graph/auto_parallel/pipeline.h), planned on every core: each traced
    step's fastest layouts, layouts within the budget's share for the stage's layers where those
    overrun it, then the inter-op search (exact under its model) over every split. `keep` (as
    plan()'s) keeps the stage's parameters' layouts: a hand layout priced, and `in_place` (as
    plan()'s) computes with them as they are. Raises when nothing fits, naming the least memory
    any choice needs.

    `recompute`: None lets the search choose whether the backward recomputes activations (the
    faster that fits); True or False forces it, to price a configuration as it ran (Megatron-LM
    recomputed every layer's forward in its published runs).

    `chunks`: the virtual stages a device to weigh: 1 is 1F1B, more the interleaved schedule
    (Megatron-LM's: the repeated layers split evenly into stages x chunks virtual stages, device
    s running s, s + stages, ...; counts that do not divide the layers are skipped).

    `given=True`: the layouts the step's model was given (its to_global), computed with as they
    lie (plan()'s keep=True, in_place=True: every op must read them so), are an option beside
    the planned ones at every stage size where they are not simply replicated, so the plan is
    never predicted slower than a hand layout the model starts from.

    `save`: a folder to write what the search plans from (the traced steps, the cluster, the
    numbers; no tensor data), for the C++ API's ofl::plan_pipeline(dir) (oneflowlike/planning.h)
    to plan the same pipeline without the model's code."""
    if recompute not in (None, True, False):
        raise ValueError(
            f"[plan_pipeline] recompute must be None, True or False, got {recompute!r}"
        )
    allowed = {None: "either", True: "always", False: "never"}[recompute]
    chunks = [int(v) for v in chunks]
    cluster = cluster if cluster is not None else _C.get_cluster_spec()
    budget = memory_budget if memory_budget is not None else cluster.mem_capacity
    budget = float(budget) if budget else math.inf
    cache = _plan_cache(cluster)  # conversions priced once for every plan
    if stage_devices is None:
        stage_devices = [
            d
            for d in (1 << k for k in range(devices.bit_length()))
            if devices % d == 0 and devices // d <= layers
        ]
    traced = [
        (
            d,
            m,
            _Traced(
                *step_for(stage_placement(d, cluster, device_type=device_type), m), keep, in_place
            ),
        )
        for d in stage_devices
        for m in micro_batches
    ]
    steps = [(d, m, t.traced, t.kept, t.names, t.in_place) for d, m, t in traced]
    owner = list(range(len(traced)))  # the traced entry each step is planned from
    if given:
        for i, (d, m, t) in enumerate(traced):
            if not t.replicated:
                steps.append((d, m, t.traced, t.all_kept, t.names, True))
                owner.append(i)
    if save is not None:
        _C.save_pipeline_inputs(
            os.fspath(save), steps, layers, devices, budget, cluster, allowed, chunks
        )
    found = _C.search_pipeline(steps, layers, devices, budget, cache, allowed, chunks)
    chosen = traced[owner[found["step"]]][2]
    intra = Plan(found["plan"], chosen.names, chosen.placement)
    return PipelinePlan(found, intra, layers, device_type)
