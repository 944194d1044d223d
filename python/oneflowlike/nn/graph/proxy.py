"""GraphModule: a module's settings inside nn.Graphs (activation checkpointing, pipeline stage),
reached as ``module.to(flow.nn.graph.GraphModule)``."""

import oneflowlike as flow
from oneflowlike import _C
from oneflowlike.nn import module as _module


class GraphModule:
    """A module's settings inside graphs, as OneFlow spells them:
    ``module.to(flow.nn.graph.GraphModule).activation_checkpointing = True``."""

    def __init__(self, module):
        self._module = module

    @property
    def activation_checkpointing(self):
        return self._module._activation_checkpointing

    @activation_checkpointing.setter
    def activation_checkpointing(self, on):
        """Keep only the module's inputs for backward; recompute its activations there."""
        self._module._activation_checkpointing = bool(on)

    @property
    def stage_id(self):
        stage = self._module.__dict__.get("_pipeline_stage")
        return None if stage is None else stage[0]

    def set_stage(self, stage_id, placement):
        """Puts the module in pipeline stage `stage_id` on `placement`: its parameters and
        buffers move there now (in place, keeping their SBP; local ones become replicated), and
        its global positional inputs move there at each call (to_global(placement), keeping
        their SBP; keyword arguments and tensors inside containers are left as they are)."""
        module = self._module
        if not isinstance(stage_id, int) or isinstance(stage_id, bool) or stage_id < 0:
            raise ValueError(f"[graph] set_stage: stage_id must be an int >= 0, got {stage_id!r}")
        if not isinstance(placement, flow.placement):
            raise TypeError(f"[graph] set_stage: expected a flow.placement, got {placement!r}")
        with flow.no_grad():
            for t in list(module.parameters()) + list(module.buffers()):
                t.data = _on_placement(t.detach(), placement)
        old = module.__dict__.get("_pipeline_stage")
        if old is not None:
            for h in old[2]:
                h.remove()
        outer = []

        def enter(m, args):  # ops from here on, and their backward, run in this stage
            outer.append(_C._set_stage(stage_id))
            return tuple(
                _on_placement(a, placement) if isinstance(a, flow.Tensor) and a.is_global else a
                for a in args
            )

        def leave(m, args, output):
            _C._set_stage(outer.pop())

        hooks = [module.register_forward_pre_hook(enter), module.register_forward_hook(leave)]
        object.__setattr__(module, "_pipeline_stage", (stage_id, placement, hooks))
        _module._changed()  # the graph's call keys on the stages
        return self


def _on_placement(t, placement):
    """`t` on `placement`, keeping its SBP where the meshes have as many axes (else replicated)."""
    if not t.is_global:
        return t.to_global(placement, [flow.sbp.broadcast] * len(placement.hierarchy))
    if t.placement == placement:
        return t
    if len(t.placement.hierarchy) == len(placement.hierarchy):
        return t.to_global(placement)  # a traced tensor's layout is chosen as the graph compiles
    return t.to_global(placement, [flow.sbp.broadcast] * len(placement.hierarchy))
