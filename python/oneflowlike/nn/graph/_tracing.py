"""nn.Graph's tracing (a mixin of Graph): build() traced once per input signature into a graph
for the C++ compiler, with its backward, the optimizers' updates, loss scaling, micro-batches
cut from the inputs and the modules of repeated layers tagged for the planner."""

import contextlib

import oneflowlike as flow
from oneflowlike import _C

from . import _loss_scale, _zero
from .proxy import _on_placement


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


class Tracing:
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

    def _autocast(self, args):
        """config.enable_amp: the build traced under autocast on its inputs' device type."""
        if not self.config.amp:
            return contextlib.nullcontext()
        first = next((a for a in args if isinstance(a, flow.Tensor)), None)
        kind = first.placement.type if first is not None and first.is_global else None
        kind = kind or (first.device.type if first is not None else "cpu")
        return flow.autocast("cuda" if kind == "cuda" else "cpu", dtype=self.config.amp_dtype)
