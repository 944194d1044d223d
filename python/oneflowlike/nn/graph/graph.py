"""nn.Graph: a module's step traced once per input signature and run as a compiled graph by the
C++ executor (OneFlow's API).

Without an optimizer, build() is traced without autograd (an inference graph). With
add_optimizer(), build() is traced with autograd: its loss.backward() traces the backward
definitions, then each optimizer's update traces as in-place ops on the parameters and states,
which the graph writes at every call, as eager steps do. The optimizers' per-step scalars
(learning rate, bias corrections) are graph inputs computed in Python at every call, so a
learning-rate schedule and step counts stay live. Parameters' .grad are left as they were."""

import contextlib
import inspect

import oneflowlike as flow
from oneflowlike import _C, auto_parallel
from oneflowlike.nn import module as _module

from . import _loss_scale, _zero
from ._save import save as _save_graph
from .config import GraphConfig
from ._warnings import warn_once as _warn_once
from .proxy import _on_placement


def _signature(t):
    """What a compiled graph is specific to: shape, dtype, device; placement and SBP if global."""
    sig = (tuple(t.shape), t.dtype, str(t.device))
    if t.is_global:
        sig += (str(t.placement), tuple(s.to_string() for s in t.sbp))
    return sig


def _flat(ranks):
    """The ranks of a placement's (nested) list."""
    return [r for x in ranks for r in (_flat(x) if isinstance(x, list) else [x])]


def _dim0_shards(x):
    """How many shards a global tensor's dimension 0 is split into (1: not split, or local)."""
    shards = 1
    if x.is_global:
        for axis, s in zip(x.placement.hierarchy, x.sbp):
            if s.kind == "split" and s.axis == 0:
                shards *= axis
    return shards


def _micro_batches(inputs, m, shards):
    """Each input cut into m micro-batches along dimension 0, every input alike so that a row of
    one stays with the same row of the others. When every input was given split on dimension 0
    into the same P shards (`shards`: each input's count, _dim0_shards), micro-batch i takes the
    i-th m-th of every shard (x.view(P, m, b, ...).select(1, i)), so that each rank cuts its
    own rows without communication (still so for an input moved since onto fewer ranks dividing
    P); otherwise the inputs are cut in order (chunk). Either way every row is in one micro-batch
    once."""
    if m == 1:
        return [[x] for x in inputs]
    shards, rows = set(shards), {x.shape[0] for x in inputs}
    p = shards.pop() if len(shards) == 1 else 1
    if p == 1 or len(rows) != 1 or rows.pop() % (p * m):
        return [list(x.chunk(m, 0)) for x in inputs]
    out = []
    for x in inputs:
        grouped = x.view(p, m, x.shape[0] // (p * m), *x.shape[1:])
        # clone(): a contiguous micro-batch, as chunk's are (a traced view looks contiguous
        # while tracing whatever its strides when the graph runs).
        out.append([grouped.select(1, i).clone().reshape(-1, *x.shape[1:]) for i in range(m)])
    return out


# The state_dict key of a training graph's step count (OneFlow's name).
TRAIN_STEP = "System-Train-TrainStep"


class Graph:
    """Subclass, set modules as attributes in __init__, and define build(*inputs)."""

    def __init__(self):
        self.config = GraphConfig()
        self._compiled = {}  # input signature -> (compiled graph, single output, optimizer steps)
        self._captured = {}  # input signature -> its CapturedStep (enable_cudagraph)
        self._scalar_device = None
        self._last = None
        self._optimizers = []  # (optimizer, lr scheduler or None)
        self._plan = None  # flow.auto_parallel's, once planned
        self._timeline = None  # the last call's, with config.enable_timeline
        self._zero_layouts = {}  # config.enable_zero's: id(parameter) -> its sharded layout
        self._train_step = 0  # the calls that stepped the optimizers (state_dict's TRAIN_STEP)

    def build(self, *args):
        raise NotImplementedError("[graph] subclasses of nn.Graph define build(*inputs)")

    def add_optimizer(self, optimizer, lr_sch=None):
        """The graph steps `optimizer` after build() (and `lr_sch` after each call)."""
        if not isinstance(optimizer, flow.optim.Optimizer):
            raise TypeError(f"[graph] add_optimizer expects an Optimizer, got {optimizer!r}")
        self._optimizers.append((optimizer, lr_sch))

    def set_grad_scaler(self, grad_scaler):
        """Loss scaling in the graph's step (OneFlow's): flow.amp.GradScaler or StaticGradScaler.
        The build's loss.backward() is scaled, the gradients are unscaled before the optimizers
        step, and a step whose gradients overflow is skipped; after each call the scaler's state
        (get_scale()) is as its eager step() and update() would leave it."""
        self.config.set_grad_scaler(grad_scaler)

    def _graph_modules(self):
        """Every module the graph holds, at any depth, and their modes (training, pipeline stage):
        walked again only when the graph holds other modules, or any module's children or
        `training` changed since (nn.module.tree_version); a walk that finds other modules than
        the last one bumps `_structure`, which the compiled graphs are keyed on."""
        tops = [id(v) for v in self.__dict__.values() if isinstance(v, flow.nn.Module)]
        version = _module.tree_version()
        cached = self.__dict__.get("_modules_walked")
        if cached is not None and cached[0] == version and cached[1] == tops:
            return cached[2], cached[3]
        walked = [
            m for v in self.__dict__.values() if isinstance(v, flow.nn.Module) for m in v.modules()
        ]
        # Other modules than the last walk's (a child replaced): a new trace, bound to them.
        ids = [id(m) for m in walked]
        if ids != self.__dict__.get("_walked_ids", ids):
            self._structure = self.__dict__.get("_structure", 0) + 1
        self._walked_ids = ids
        # A module switched between train() and eval() (dropout on or off) traces again. So do a
        # module moved to another pipeline stage and another schedule.
        modes = tuple(
            (
                (m.training, *[str(x) for x in m.__dict__["_pipeline_stage"][:2]])
                if "_pipeline_stage" in m.__dict__
                else m.training
            )
            for m in walked
        )
        self._modules_walked = (version, tops, walked, modes)
        return walked, modes

    def __call__(self, *args):
        if not hasattr(self, "_compiled"):
            raise RuntimeError(
                f"[graph] {type(self).__name__}.__init__ must call super().__init__()"
            )
        signature = self.__dict__.get("_build_signature")
        if signature is None:  # (inspect.signature costs a call as much as a small graph's run)
            signature = self._build_signature = inspect.signature(self.build)
        try:
            signature.bind(*args)
        except TypeError:
            raise TypeError(
                f"[graph] {type(self).__name__}.build{signature} takes "
                f"{len(signature.parameters)} inputs, got {len(args)}"
            ) from None
        for i, a in enumerate(args):
            if not isinstance(a, flow.Tensor):
                raise TypeError(
                    f"[graph] input {i} of {type(self).__name__}.build{signature} is a "
                    f"{type(a).__name__}, expected a Tensor"
                )
        planning = self.config.auto_parallel and any(a.is_global for a in args)
        if self.config.auto_parallel and not planning:
            _warn_once(
                "enable_auto_parallel on local inputs: one device, nothing to lay out (the graph "
                "runs as it is; give global inputs to plan)"
            )
        if planning and self.config.auto_parallel_pipeline and self._plan is None:
            self._plan = self._plan_pipeline(args)  # sets the stages and micro-batches
        micro = self.config.gradient_accumulation_steps
        if micro > 1:
            for i, a in enumerate(args):
                if a.dim() == 0 or a.shape[0] % micro:
                    raise ValueError(
                        f"[graph] input {i} of shape {tuple(a.shape)} does not split into "
                        f"{micro} micro-batches along dimension 0"
                    )
        modes = (self._graph_modules()[1], self.__dict__.get("_structure", 0))
        amp = (self.config.amp, repr(self.config.amp_dtype))
        scaler = _loss_scale.active(self.config.grad_scaler) if self._optimizers else None
        scaling = None if scaler is None else scaler._dynamic
        # config.enable_cudagraph on a CUDA step: its scalars live there, traced and fed.
        self._scalar_device = None
        if self.config.cudagraph:
            cuda = [a.device for a in args if a.device.type == "cuda"]
            self._scalar_device = cuda[0] if cuda else None
        key = (micro, self.config.pipeline_schedule, modes, amp, self.config.zero_stage, scaling)
        key += (self.config.fuse_add_to_output, str(self._scalar_device))
        key += tuple(_signature(a) for a in args)
        if key not in self._compiled:
            if planning and self._plan is None:  # (a pipeline's is planned)
                self._plan = self._plan_layouts(args)
            self._zero_layouts = _zero.apply(self, args)
            self._compiled[key] = self._trace(args)
            self._debug_compiled(self._compiled[key][0])
        compiled, single, steps = self._compiled[key]
        self._last = compiled
        self._last_single = single
        self._last_inputs = [(tuple(a.shape), a.dtype, a.is_global) for a in args]
        counters = _loss_scale.host_counters(steps) if scaling else []
        scalars = [] if scaler is None else _loss_scale.inputs(scaler, self._scalar_device)
        scalars += [
            flow.tensor(v, dtype=flow.float32, device=self._scalar_device)
            for opt, group, param in steps
            for v in opt._host(group, param, opt.state[param])
        ]
        if self._scalar_device is not None and not self.config.timeline:
            outs = self._replay(key, compiled, list(args) + scalars)
        elif self.config.timeline:
            outs, spans = compiled.run_timed(list(args) + scalars)
            self._timeline = [
                dict(zip(("node", "thread", "start", "end", "stage", "micro", "backward"), s))
                for s in spans
            ]
        else:
            outs = compiled.run(list(args) + scalars)
        if scaler is not None:
            found = outs.pop() if scaling else None
            _loss_scale.after_run(scaler, found, counters)
        for _, lr_sch in self._optimizers:
            if lr_sch is not None:
                lr_sch.step()
        if self._optimizers:
            self._train_step += 1
        return outs[0] if single else tuple(outs)

    def _trace(self, args, finish="finish"):
        """Traces build(*args); returns (graph, single output, optimizer steps). `finish`: the
        Trace method giving the graph ("finish": compiled; "finish_traced": as traced, for the
        auto-parallel planner)."""
        params = [p for opt, _ in self._optimizers for g in opt.param_groups for p in g["params"]]
        grads = [p.grad for p in params]  # the graph computes its own; eager ones are kept
        for p in params:
            p.grad = None
        for opt, _ in self._optimizers:  # states are variables: made before tracing
            for group in opt.param_groups:
                for p in group["params"]:
                    if p.requires_grad:
                        opt._state_of(group, p)
        layers = self._repeated_layers()
        stages = self._stages()
        if stages and self.config.auto_parallel and not self.config.auto_parallel_pipeline:
            raise NotImplementedError(
                "[graph] enable_auto_parallel with modules in pipeline stages (set_stage): let "
                "it choose the stages too (enable_auto_parallel(True, pipeline=True)), or plan "
                "with flow.auto_parallel.plan_pipeline and lay the model out with "
                "PipelinePlan.apply"
            )
        _C._set_layer(-1)  # whatever an earlier call that raised inside a layer or stage left
        _C._set_stage(-1)
        micro = self.config.gradient_accumulation_steps
        moves = self._input_moves(args, params) if stages and micro > 1 else [None] * len(args)
        hooks = [h for m in layers for h in self._tag_layer(m, layers[m])]
        scaler = _loss_scale.active(self.config.grad_scaler) if self._optimizers else None
        if scaler is not None and stages:
            raise NotImplementedError(
                "[graph] set_grad_scaler with pipeline stages (set_stage) is not carried out: "
                "train the pipeline in bfloat16 (enable_amp(True, dtype=flow.bfloat16))"
            )
        # ZeRO-2: gradients reduced once, to their sharded layouts (reduce-scatter).
        sharded = self._zero_layouts if self.config.zero_stage == 2 else {}
        trace = _C.Trace()
        try:
            inputs = [trace.input(a) for a in args]
            scaling = (
                None if scaler is None else _loss_scale.Traced(scaler, trace, self._scalar_device)
            )
            scaled = scaling.scaled_backward() if scaling else contextlib.nullcontext()
            with flow.set_grad_enabled(bool(self._optimizers)), self._autocast(args), scaled:
                if micro == 1 and not stages:
                    trace.set_defer_grad_reductions(bool(sharded))
                    result = self.build(*inputs)
                    trace.set_defer_grad_reductions(False)
                    with flow.no_grad():
                        for p in params if sharded else []:
                            if p.grad is not None and p.is_global:
                                p.grad = _zero.boxed_grad(trace, p, sharded)
                else:
                    shards = [_dim0_shards(x) for x in inputs]
                    # Each input moves to where it is read once, then is cut.
                    inputs = [
                        x if to is None else _on_placement(x, to) for x, to in zip(inputs, moves)
                    ]
                    chunks = _micro_batches(inputs, micro, shards)
                    results = []
                    # Gradients add up over the micro-batches as partial sums, reduced once.
                    trace.set_defer_grad_reductions(True)
                    for i in range(micro):  # the pipeline pass orders them by the schedule
                        trace.set_micro_batch(i)
                        results.append(self.build(*[c[i] for c in chunks]))
                    trace.set_micro_batch(-1)
                    trace.set_defer_grad_reductions(False)
                    result = self._stacked(results) if micro > 1 else results[0]
                    with flow.no_grad():  # the mean of the micro-batch losses
                        for p in params:
                            if p.grad is not None and micro > 1:
                                p.grad = p.grad / micro
                            if p.grad is not None and p.is_global:
                                p.grad = _zero.boxed_grad(trace, p, sharded)
            if scaling is not None:
                scaling.unscale(params)
            single = not isinstance(result, (tuple, list))
            outputs = [result] if single else list(result)
            for i, o in enumerate(outputs):
                if not isinstance(o, flow.Tensor):
                    raise TypeError(
                        f"[graph] build() returned a {type(o).__name__} as output {i}; "
                        "return tensors (or a tuple of them)"
                    )
            param_layer = {id(p): i for m, i in layers.items() for p in m.parameters()}
            steps = self._trace_optimizers(trace, param_layer, scaling)
            if scaling is not None:
                outputs += scaling.outputs()
            if finish == "finish_traced":
                return trace.finish_traced(outputs), single, steps
            budget = self.config.auto_parallel_memory_budget
            compiled = trace.finish(
                outputs,
                auto_parallel=self.config.auto_parallel and not stages,
                memory_budget=float("inf") if budget is None else budget,
                stages=stages,
                schedule=self.config.pipeline_schedule,
                micro_batches=micro,
                fuse_add_to_output=self.config.fuse_add_to_output,
            )
            return compiled, single, steps
        finally:
            trace.close()
            _C._set_layer(-1)  # whatever raised inside a layer or a stage
            _C._set_stage(-1)
            for h in hooks:
                h.remove()
            for p, g in zip(params, grads):
                p.grad = g

    def _input_moves(self, args, params):
        """Where a pipeline's inputs are read, when elsewhere than where they are given
        (Trace.input_moves): a placement or None per input, from a trace of build(*args) without
        micro-batches, thrown away. Moved while traced micro-batch by micro-batch, an input would
        cross ranks m times a step."""
        probe = _C.Trace()
        try:
            with flow.set_grad_enabled(bool(self._optimizers)):
                result = self.build(*[probe.input(a) for a in args])
            outputs = result if isinstance(result, (tuple, list)) else [result]
            return probe.input_moves([o for o in outputs if isinstance(o, flow.Tensor)])
        finally:
            probe.close()
            _C._set_stage(-1)
            for p in params:
                p.grad = None

    def _stages(self):
        """The pipeline stages' placements by stage id (GraphModule.set_stage), [] for none.
        Raises naming the modules when one runs in two stages (inside a module of another stage,
        or sharing a parameter with one) or one stage id has two placements."""
        staged = {}  # module -> (name, stage id, placement)
        for attr, top in self.__dict__.items():
            if not isinstance(top, flow.nn.Module):
                continue
            for name, m in top.named_modules():
                stage = m.__dict__.get("_pipeline_stage")
                if stage is not None and m not in staged:
                    staged[m] = (f"{attr}.{name}" if name else attr, stage[0], stage[1])
        if not staged:
            return []
        owner = {}  # parameter id -> (module name, stage id)
        for m, (name, sid, _) in staged.items():
            for inner_name, inner in m.named_modules():
                if inner is not m and inner in staged and staged[inner][1] != sid:
                    raise ValueError(
                        f"[graph] {staged[inner][0]} is in stage {staged[inner][1]} but inside "
                        f"{name}, which is in stage {sid}: a module runs in one stage"
                    )
            for p in m.parameters():
                first = owner.setdefault(id(p), (name, sid))
                if first[1] != sid:
                    raise ValueError(
                        f"[graph] {name} (stage {sid}) and {first[0]} (stage {first[1]}) share "
                        "a parameter: a module runs in one stage"
                    )
        by_id = {}
        for name, sid, placement in staged.values():
            first = by_id.setdefault(sid, (name, placement))
            if first[1] != placement:
                raise ValueError(
                    f"[graph] stage {sid} is on {first[1]} for {first[0]} but on {placement} for "
                    f"{name}"
                )
        missing = [s for s in range(max(by_id) + 1) if s not in by_id]
        if missing:
            raise ValueError(
                f"[graph] stage ids go from 0 without gaps: no module is in stage {missing[0]} "
                f"(stages: {sorted(by_id)})"
            )
        return [by_id[s][1] for s in range(len(by_id))]

    def _repeated_layers(self):
        """The children of ModuleLists and Sequentials whose children all have one structure (type
        and parameter shapes), numbered: the repeated layers the planner solves once. The
        outermost only: a repeated layer's own lists are part of it."""
        layers = {}

        def shape(m):
            return type(m), tuple((n, tuple(p.shape)) for n, p in m.named_parameters())

        def visit(m):
            children = list(m.children())
            if (
                isinstance(m, (flow.nn.ModuleList, flow.nn.Sequential))
                and len(children) > 1
                and len({shape(c) for c in children}) == 1
            ):
                for c in children:
                    layers.setdefault(c, len(layers))
                return
            for c in children:
                visit(c)

        for module in self.__dict__.values():
            if isinstance(module, flow.nn.Module):
                visit(module)
        return layers

    @staticmethod
    def _tag_layer(module, layer):
        """Hooks tracing `module`'s forward in repeated layer `layer` (its backward follows)."""
        outer = []

        def enter(m, args):
            outer.append(_C._set_layer(layer))

        def leave(m, args, output):
            _C._set_layer(outer.pop())

        return [module.register_forward_pre_hook(enter), module.register_forward_hook(leave)]

    def _plan_pipeline(self, args):
        """Plans the pipeline for these inputs (flow.auto_parallel.plan_pipeline on meta copies
        of the graph's modules) and lays the modules out as it says, in place."""
        layers = self._repeated_layers()
        lists = [
            (attr, top, name, child)
            for attr, top in self.__dict__.items()
            if isinstance(top, flow.nn.Module)
            for name, child in top.named_children()
            if any(c in layers for c in child.children())
        ]
        if len(lists) != 1:
            raise ValueError(
                "[graph] a planned pipeline needs one list of repeated layers (a ModuleList "
                f"directly in a module of the graph, its children of one structure); found "
                f"{len(lists)}"
            )
        attr, top, list_name, container = lists[0]
        children = [m for _, m in top.named_children()]
        cut = children.index(container)
        places = {str(a.placement) for a in args if a.is_global}
        if len(places) != 1:
            raise ValueError(
                f"[graph] a planned pipeline takes global inputs on one placement, got {places}"
            )
        placement = next(a.placement for a in args if a.is_global)
        ranks = sorted(_flat(placement.ranks))
        if ranks != list(range(len(ranks))):
            raise ValueError(
                f"[graph] a planned pipeline runs on ranks 0..n-1, got inputs on {placement}"
            )
        shapes = [(tuple(a.shape), a.dtype) for a in args]
        batch = shapes[0][0][0]
        micro = [m for m in (1, 2, 4, 8) if batch % m == 0 and batch // m >= len(ranks)] or [1]
        cluster = _C.get_cluster_spec()
        plan = auto_parallel.plan_pipeline(
            lambda p, m: self._meta_step(attr, list_name, p, shapes, m),
            len(container),
            len(ranks),
            cluster=cluster,
            memory_budget=self.config.auto_parallel_memory_budget,
            micro_batches=micro,
            device_type=placement.type,  # the stages on the inputs' kind of device
            chunks=self.config.auto_parallel_chunks,
        )
        plan.apply(top, container, children[:cut], children[cut + 1 :], cluster)
        self.config.gradient_accumulation_steps = plan.micro_batches
        if plan.chunks > 1:
            self.config.set_pipeline_schedule("interleaved_1f1b")
        return plan

    def _meta_step(self, attr, list_name, placement, shapes, micro_batches):
        """This graph on meta copies of its modules on `placement`, the list of repeated layers
        `attr`.`list_name` cut to its first two, with fresh optimizers of the same kinds and
        settings; and meta inputs of one of `micro_batches` micro-batches, split on dimension
        0. What plan_pipeline prices a stage with."""
        import copy

        modules = {n: m for n, m in self.__dict__.items() if isinstance(m, flow.nn.Module)}
        memo = {}
        for m in modules.values():
            for t in list(m.parameters()) + [b for b in m.buffers() if b is not None]:
                meta = flow.empty(*t.shape, dtype=t.dtype, device="meta")
                is_param = isinstance(t, flow.nn.Parameter)
                memo[id(t)] = flow.nn.Parameter(meta, t.requires_grad) if is_param else meta
        proxy = copy.copy(self)
        proxy.__dict__ = dict(self.__dict__)
        axes = len(placement.hierarchy)
        clones = {}
        for name, m in modules.items():
            clone = copy.deepcopy(m, memo)
            if name == attr:
                kept = getattr(clone, list_name)
                kept._modules = type(kept._modules)(list(kept._modules.items())[:2])
            B = flow.sbp.broadcast
            clones[name] = clone.to_global(placement, tuple([B] * axes) if axes > 1 else B)
            proxy.__dict__[name] = clones[name]
        by_name = {
            (n, pn): p for n, c in clones.items() for pn, p in c.named_parameters()
        }  # fmt: skip
        names = {id(p): (n, pn) for n, m in modules.items() for pn, p in m.named_parameters()}
        proxy._optimizers = []
        for opt, _ in self._optimizers:
            params = [
                by_name[names[id(p)]]
                for g in opt.param_groups
                for p in g["params"]
                if names.get(id(p)) in by_name
            ]
            proxy._optimizers.append((type(opt)(params, **opt.defaults), None))
        proxy.config = GraphConfig()
        proxy._compiled, proxy._plan, proxy._last, proxy._timeline = {}, None, None, None
        inputs = [
            flow.zeros(shape[0] // micro_batches, *shape[1:], dtype=dtype, device="meta",
                       placement=placement, sbp=[flow.sbp.split(0)] * axes)
            for shape, dtype in shapes
        ]  # fmt: skip
        return proxy, inputs

    def _plan_layouts(self, args):
        """Plans the step for these inputs and lays the parameters and optimizer states out as
        the plan says, in place (graph.plan afterwards)."""
        plan = auto_parallel.plan(self, args, memory_budget=self.config.auto_parallel_memory_budget)
        for module in self.__dict__.values():
            if isinstance(module, flow.nn.Module):
                plan.apply(module)
        for opt, _ in self._optimizers:
            plan.apply_states(opt)
        return plan

    @property
    def plan(self):
        """The auto-parallel plan (graph.config.enable_auto_parallel), once the graph has run."""
        return self._plan

    @staticmethod
    def _stacked(results):
        """The micro-batches' outputs, each stacked along a new dimension 0."""
        if isinstance(results[0], (tuple, list)):
            return tuple(flow.stack([r[j] for r in results]) for j in range(len(results[0])))
        return flow.stack(results)

    def _trace_optimizers(self, trace, param_layer, scaling=None):
        """Each optimizer's update on the traced gradients, its scalars as graph inputs, each in its
        parameter's repeated layer (param_layer: by id), undone on overflow under a dynamic loss
        `scaling`; returns (optimizer, group, param) in the order the scalars are fed."""
        steps = []
        with flow.no_grad():
            for opt, _ in self._optimizers:
                updates = [
                    (g, p, grad) for g in opt.param_groups for p, grad in opt._group_grads(g)
                ]
                for group, param, grad in updates:
                    outer = _C._set_layer(param_layer.get(id(param), -1))
                    state = opt._state_of(group, param)
                    saved = dict(state)  # _host advances Python-side counters: not this time
                    example = opt._host(group, param, state)
                    state.clear()
                    state.update(saved)
                    scalars = [
                        trace.input(flow.tensor(v, dtype=flow.float32, device=self._scalar_device))
                        for v in example
                    ]
                    written = [param] + [v for v in state.values() if isinstance(v, flow.Tensor)]
                    with scaling.guarded(written) if scaling else contextlib.nullcontext():
                        opt._update(group, param, grad, state, scalars)
                    _C._set_layer(outer)
                    steps.append((opt, group, param))
        return steps

    def _replay(self, key, compiled, inputs):
        """config.enable_cudagraph: the first call runs as usual (cuBLAS and the allocator warm
        up), the second captures the step, every call replays it."""
        captured = self._captured.get(key)
        if captured is None:
            reason = compiled.why_not_captured(inputs)
            if reason:
                _warn_once(f"enable_cudagraph: this step runs uncaptured: {reason}")
                captured = self._captured[key] = False
            else:
                self._captured[key] = "warm"
                return compiled.run(inputs)
        if captured is False:
            return compiled.run(inputs)
        if captured == "warm":
            try:
                captured = self._captured[key] = _C.CapturedStep(compiled, inputs)
            except RuntimeError as e:  # an op the capture cannot hold (a wait on the host)
                _warn_once(f"enable_cudagraph: this step runs uncaptured: {e}")
                self._captured[key] = False
                return compiled.run(inputs)
        return captured(inputs)

    def _autocast(self, args):
        """config.enable_amp: the build traced under autocast on its inputs' device type."""
        if not self.config.amp:
            return contextlib.nullcontext()
        first = next((a for a in args if isinstance(a, flow.Tensor)), None)
        kind = first.placement.type if first is not None and first.is_global else None
        kind = kind or (first.device.type if first is not None else "cpu")
        return flow.autocast("cuda" if kind == "cuda" else "cpu", dtype=self.config.amp_dtype)

    def debug(self, v_level=0, *, ranks=None, max_py_stack_depth=2, only_user_py_stack=True,
              op_repr_with_py_stack=False):  # fmt: skip
        """OneFlow's graph.debug: at each compilation, on `ranks` (default 0), v_level 0 prints a
        line (inputs, nodes, variables), 1 or more the compiled graph too; -1 stops. The Python
        stack options are accepted and not used."""
        ranks = [0] if ranks is None else [ranks] if isinstance(ranks, int) else list(ranks)
        self._debug = (int(v_level), ranks)

    def _debug_compiled(self, compiled):
        level, ranks = getattr(self, "_debug", (-1, []))
        if level < 0 or flow.env.get_rank() not in ranks:
            return
        print(
            f"[graph] {type(self).__name__} compiled (inputs: {compiled.signature}; "
            f"{compiled.num_nodes} nodes, {compiled.num_variables} variables)"
        )
        if level >= 1:
            print(compiled)

    def _modules(self):
        return {n: m for n, m in self.__dict__.items() if isinstance(m, flow.nn.Module)}

    def state_dict(self):
        """The graph's whole state, as OneFlow's: each module's state dict under its attribute
        name, and each optimizer's (and its lr scheduler's) under "_optimizer<i>"
        ("_lr_scheduler<i>"); a training graph's steps so far under "System-Train-TrainStep" (an
        int64 tensor, as OneFlow's pipeline checkpoints read it). flow.save writes it;
        load_state_dict resumes from it."""
        out = {name: m.state_dict() for name, m in self._modules().items()}
        for i, (opt, sch) in enumerate(self._optimizers):
            out[f"_optimizer{i}"] = opt.state_dict()
            if sch is not None:
                out[f"_lr_scheduler{i}"] = sch.state_dict()
        if self._optimizers:
            out[TRAIN_STEP] = flow.tensor(self._train_step, dtype=flow.int64)
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Loads what state_dict() gave, before the graph's first call (as OneFlow: the compiled
        graph holds the states it was traced with). With `strict`, the keys must be exactly
        those of state_dict()."""
        if self._compiled:
            raise RuntimeError(
                f"[graph] {type(self).__name__}.load_state_dict after its first call: load before "
                "calling it (the compiled graph holds the states it was traced with)"
            )
        want = set(self.state_dict())
        got = set(state_dict) | (want & {TRAIN_STEP})  # (saved before it was counted: 0)
        if strict and want != got:
            raise KeyError(
                f"[graph] {type(self).__name__}.load_state_dict: missing {sorted(want - got)}, "
                f"unexpected {sorted(got - want)}"
            )
        for name, m in self._modules().items():
            if name in state_dict:
                m.load_state_dict(state_dict[name], strict=strict)
        for i, (opt, sch) in enumerate(self._optimizers):
            if f"_optimizer{i}" in state_dict:
                opt.load_state_dict(state_dict[f"_optimizer{i}"])
            if sch is not None and f"_lr_scheduler{i}" in state_dict:
                sch.load_state_dict(state_dict[f"_lr_scheduler{i}"])
        if TRAIN_STEP in state_dict:
            self._train_step = int(state_dict[TRAIN_STEP])

    def save(self, path, dynamic_batch=None):
        """Writes the last-run compiled graph to the folder `path`: graph.json (the IR, nodes with
        typed attributes, input and output names), weights.safetensors (the variables:
        parameters and buffers by their names in the graph's modules, other constants const0,
        const1, ... in order, so graphs of one model write alike; for a graph over placements the
        distributed checkpoint weights/, every rank saving together) and manifest.json (format
        and version). Written aside and renamed, so an interrupted save leaves any earlier one
        at `path` intact.

        dynamic_batch: the C++ API then runs the graph for any size of dimension 0 (the batch);
        the graph is traced once more at another batch size to find what follows it. None (the
        default): when the graph allows it (inference, local inputs); True raises saying why
        not; False saves it for the last call's batch only."""
        _save_graph(self, path, dynamic_batch)

    @property
    def timeline(self):
        """When each node with work on this rank ran in the last call (config.enable_timeline):
        dicts of node, thread ("compute" or "comm"), start and end (seconds on the machine's
        steady clock), pipeline stage, micro-batch and backward."""
        return self._timeline

    @property
    def peak_bytes(self):
        """The most bytes the last-run compiled graph's computed values hold at once."""
        return None if self._last is None else self._last.peak_bytes

    def predict(self, cluster=None):
        """The cost model's (step, compute, communication) seconds for the last-run compiled
        graph, per device: the step on a timeline of the executor's compute and communication
        threads, and each thread's busy time (cluster: default flow.boxing.get_cluster_spec())."""
        if self._last is None:
            raise RuntimeError("[graph] predict: call the graph once first (it compiles then)")
        return self._last.predict(cluster if cluster is not None else _C.get_cluster_spec())

    @property
    def num_compiled(self):
        """How many input signatures have been traced and compiled."""
        return len(self._compiled)

    def __repr__(self):
        if self._last is None:
            return f"{type(self).__name__}(not compiled yet: call it once)"
        return (
            f"{type(self).__name__}(inputs: {self._last.signature}; "
            f"{self._last.num_nodes} nodes, {self._last.num_variables} variables)\n{self._last}"
        )


class ForwardOnly(Graph):
    """A module's forward alone, as a graph: what flow.auto_parallel.plan traces for a bare
    module."""

    def __init__(self, module):
        super().__init__()
        self.module = module

    def build(self, *args):
        return self.module(*args)
