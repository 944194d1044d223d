"""graph.config: how an nn.Graph compiles (GraphConfig), and the pipeline schedules it can use
(pipeline_schedule)."""

from oneflowlike import _C
from oneflowlike.amp import GradScaler

from ._warnings import warn_once as _warn_once


def pipeline_schedule(kind, devices, micro_batches, chunks=1):
    """The pipeline schedule `kind` ("gpipe", "1f1b" or "interleaved_1f1b") of `micro_batches`
    over `devices` stages (`chunks` virtual stages per device, interleaved only), as data: each
    device's order of forwards and backwards with their sends and receives, what it holds in
    flight, its timeline and bubble. print() shows the orders and a grid of time slots."""
    return _C.pipeline_schedule(kind, devices, micro_batches, chunks)


class GraphConfig:
    """graph.config: how a graph compiles (OneFlow's names)."""

    def __init__(self):
        self.gradient_accumulation_steps = 1
        self.auto_parallel = False
        self.auto_parallel_memory_budget = None
        self.auto_parallel_pipeline = False
        self.auto_parallel_chunks = (1, 2)
        self.pipeline_schedule = "1f1b"
        self.timeline = False
        self.cudagraph = False
        self.fuse_add_to_output = True
        self.amp = False
        self.amp_dtype = None  # autocast's default for the device (cuda: float16, cpu: bfloat16)
        self.zero_stage = 0  # enable_zero's stage; 0: off
        self.zero_shard_min_size = 1024
        self.zero_shard_restore_level = 1
        self.grad_scaler = None  # set_grad_scaler's

    def set_gradient_accumulation_steps(self, n):
        """Split the inputs into n micro-batches along dimension 0: build() runs on each, the
        gradients accumulate as for the mean of the micro-batch losses, the optimizers step
        once, and the call returns the n micro-batch outputs stacked."""
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"[graph] gradient accumulation steps must be an int >= 1, got {n!r}")
        self.gradient_accumulation_steps = n

    def set_pipeline_schedule(self, kind):
        """How the micro-batches go through the pipeline stages (GraphModule.set_stage): "gpipe"
        (every forward, then every backward), "1f1b" (the default: at most as many micro-batches
        in flight as stages) or "interleaved_1f1b" (for more stages than placements: each
        device runs several, Megatron-LM's virtual stages)."""
        _C.pipeline_schedule(kind, 1, 1)  # raises naming the known schedules
        self.pipeline_schedule = kind

    def enable_timeline(self, on=True):
        """Record when each node runs on this rank at every call (graph.timeline)."""
        self.timeline = bool(on)

    def allow_fuse_add_to_output(self, mode=True):
        """Whether an add joins the fused chain computing one of its operands (a residual added to
        a branch's bias and activation: one pass). On by default here, where a graph fuses its
        elementwise chains (OFL_GRAPH_FUSION=0 turns that off); False keeps adds and
        subtractions as the starts of chains only."""
        self.fuse_add_to_output = bool(mode)

    def enable_cudagraph(self, mode=True):
        """Capture the compiled step as a CUDA graph at its second call and replay it at every
        call after (OneFlow's name; torch.cuda.graphs): one launch for the whole step. The
        inputs are copied into the capture's own buffers; the optimizer's scalars go to the
        device. A step that cannot be captured (inputs off one CUDA device, random draws,
        collectives, host compute) runs uncaptured, with one warning saying why; on the CPU the
        setting does nothing."""
        self.cudagraph = bool(mode)

    def enable_auto_parallel(self, on=True, memory_budget=None, pipeline=False, chunks=(1, 2)):
        """Let the planner choose every layout (flow.auto_parallel): on the first call, the
        parameters' and optimizer states' layouts (applied to them, in place), then every op's
        signature, exactly under the cost model, within `memory_budget` bytes per device
        (default: the cluster's device capacity). The inputs' SBPs are kept.

        With `pipeline`, the planner also chooses pipeline stages (flow.auto_parallel.
        plan_pipeline): the number of stages, which of the repeated layers (a ModuleList directly
        in a module of the graph) each runs, the micro-batch count, recomputation and the
        layouts inside a stage; the modules registered before the list run in the first stage,
        those after it in the last. Inputs given on every rank are moved where they are read.
        `chunks`: the virtual stages a device to weigh, 1 for 1F1B and more for the interleaved
        schedule (which the graph then runs: set_pipeline_schedule("interleaved_1f1b"))."""
        chunks = tuple(int(c) for c in chunks)
        if not chunks or min(chunks) < 1:
            raise ValueError(
                f"[graph] enable_auto_parallel: chunks must be counts of at least 1, got {chunks}"
            )
        self.auto_parallel = bool(on)
        self.auto_parallel_memory_budget = memory_budget
        self.auto_parallel_pipeline = bool(pipeline)
        self.auto_parallel_chunks = chunks

    def enable_amp(self, mode=True, *, dtype=None):
        """Mixed precision: the build is traced under flow.autocast on its inputs' device type,
        in `dtype` (default: float16 on CUDA, bfloat16 on the CPU). For float16, add loss scaling
        with Graph.set_grad_scaler."""
        self.amp, self.amp_dtype = bool(mode), dtype

    def set_grad_scaler(self, grad_scaler=None):
        """Graph.set_grad_scaler's (kept here too: one place the graph reads it from)."""
        if grad_scaler is not None and not isinstance(grad_scaler, GradScaler):
            raise TypeError(
                "[graph] set_grad_scaler expects a flow.amp.GradScaler or StaticGradScaler (or "
                f"None), got {grad_scaler!r}"
            )
        self.grad_scaler = grad_scaler

    def enable_zero(self, mode=True, *, stage=2, shard_min_size=1024, shard_restore_level=1):
        """ZeRO (OneFlow's enable_zero) on the data-parallel mesh axes (those the global inputs
        are split over), as layouts: on the first call, a parameter broadcast over such an axis
        keeps its layout but its optimizer states are split S(0) over it (stage 1); its gradient
        is reduce-scattered to S(0) there instead of all-reduced (stage 2, the default, as
        OneFlow's); and the parameter itself is split S(0), in place, gathered where it is read
        (stage 3). A parameter is sharded only when each shard holds at least shard_min_size
        elements. shard_restore_level (0, 1 or 2) is accepted: the gathers are boxing's."""
        if not isinstance(stage, int) or isinstance(stage, bool) or stage not in (1, 2, 3):
            raise ValueError(f"[graph] enable_zero: stage is 1, 2 or 3, got {stage!r}")
        if not isinstance(shard_min_size, int) or shard_min_size < 1:
            raise ValueError(
                f"[graph] enable_zero: shard_min_size is an int >= 1, got {shard_min_size!r}"
            )
        if shard_restore_level not in (0, 1, 2) or isinstance(shard_restore_level, bool):
            raise ValueError(
                "[graph] enable_zero: shard_restore_level is 0, 1 or 2, got "
                f"{shard_restore_level!r}"
            )
        self.zero_stage = stage if mode else 0
        self.zero_shard_min_size = shard_min_size
        self.zero_shard_restore_level = shard_restore_level


# What the hints below would turn on, where it is not a thing here.
_NOT_HERE = {
    "allow_fuse_model_update_ops": "the optimizers' updates are fused per parameter already "
    "(one adam_step_ a parameter); across parameters they are not",
    "allow_fuse_cast_scale": "graphs fuse elementwise chains of one computing dtype; casts are "
    "not fused into them yet",
}


def _performance_hint(name):
    def hint(self, *args, **kwargs):
        why = _NOT_HERE.get(name, "it means nothing here")
        _warn_once(f"config.{name} is a performance hint of OneFlow's compiler: ignored ({why})")

    hint.__name__ = name
    hint.__doc__ = "OneFlow's performance hint: accepted and ignored (one warning)."
    return hint


for _name in (
    "allow_fuse_model_update_ops",
    "allow_fuse_cast_scale",
    "enable_cudnn_conv_heuristic_search_algo",
    "enable_straighten_algorithm",
    "enable_compress_memory",
    "enable_auto_memory",
    "set_outputs_buffer_size",
    "enable_auto_parallel_ignore_user_sbp_config",
    "set_auto_parallel_computation_cost_ratio",
    "set_auto_parallel_wait_time",
    "enable_auto_parallel_trunk_algo",
    "enable_auto_parallel_sbp_collector",
):
    setattr(GraphConfig, _name, _performance_hint(_name))
del _name
