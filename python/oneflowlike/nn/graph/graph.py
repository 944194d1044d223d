"""nn.Graph: a module's step traced once per input signature and run as a compiled graph by the
C++ executor (OneFlow's API).

Without an optimizer, build() is traced without autograd (an inference graph). With
add_optimizer(), build() is traced with autograd: its loss.backward() traces the backward
definitions, then each optimizer's update traces as in-place ops on the parameters and states,
which the graph writes at every call, as eager steps do. The optimizers' per-step scalars
(learning rate, bias corrections) are graph inputs computed in Python at every call, so a
learning-rate schedule and step counts stay live. Parameters' .grad are left as they were."""

import inspect

import oneflowlike as flow
from oneflowlike import _C
from oneflowlike.nn import module as _module

from . import _loss_scale, _zero
from ._planning import Planning
from ._tracing import Tracing
from ._save import save as _save_graph
from .config import GraphConfig
from ._warnings import warn_once as _warn_once


def _signature(t):
    """What a compiled graph is specific to: shape, dtype, device; placement and SBP if global."""
    sig = (tuple(t.shape), t.dtype, str(t.device))
    if t.is_global:
        sig += (str(t.placement), tuple(s.to_string() for s in t.sbp))
    return sig


# The state_dict key of a training graph's step count (OneFlow's name).
TRAIN_STEP = "System-Train-TrainStep"


class Graph(Tracing, Planning):
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

    @property
    def plan(self):
        """The auto-parallel plan (graph.config.enable_auto_parallel), once the graph has run."""
        return self._plan

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
