"""Graph.set_grad_scaler: loss scaling inside a traced step, as flow.amp.GradScaler does it eagerly.

The scale and its inverse are graph inputs fed at every call. The build's loss.backward() seeds
backward with loss * scale; the gradients are multiplied by the inverse before the optimizers
(and their clipping) read them. A dynamic scaler's graph also computes whether any gradient is
inf or NaN (an output) and, when one is, writes every parameter and state back as it was: the
step is skipped without control flow. After the call the scaler updates its scale from that
output, and the optimizers' host counters (Adam's step) go back for a skipped step."""

import contextlib

import oneflowlike as flow


def active(scaler):
    """The scaler when loss scaling is on (a scaler set and enabled), else None."""
    return scaler if scaler is not None and scaler._enabled else None


def inputs(scaler, device=None):
    """This call's scale and inverse scale, as the graph's inputs after the build's (on `device`
    for a captured step, on the host otherwise)."""
    scale = scaler.get_scale()
    return [
        flow.tensor(scale, dtype=flow.float32, device=device),
        flow.tensor(1.0 / scale, dtype=flow.float32, device=device),
    ]


class Traced:
    """One trace's loss scaling (its scale inputs, its overflow flag)."""

    def __init__(self, scaler, trace, device=None):
        self.dynamic = scaler._dynamic
        self.scale, self.inv = [trace.input(t) for t in inputs(scaler, device)]
        self.found = None  # whether any gradient overflowed (dynamic scalers)

    @contextlib.contextmanager
    def scaled_backward(self):
        """While tracing the build: tensor.backward() runs on tensor * scale."""
        plain = flow.Tensor.backward
        scale = self.scale

        def backward(self, *args, **kwargs):
            return plain(self * scale, *args, **kwargs)

        flow.Tensor.backward = backward
        try:
            yield
        finally:
            flow.Tensor.backward = plain

    def unscale(self, params):
        """The parameters' gradients times the inverse scale; a dynamic scaler's overflow flag
        (global and replicated when the gradients are global)."""
        with flow.no_grad():
            flags = []
            for p in params:
                if p.grad is None:
                    continue
                p.grad = p.grad * self.inv
                if self.dynamic:
                    flags.append(((p.grad - p.grad) != 0).any())  # inf - inf and NaN: NaN
            if not flags:
                return
            found = flags[0]
            for f in flags[1:]:
                found = flow.logical_or(found, f)
            if found.is_global:
                found = found.to_global(found.placement, [flow.sbp.broadcast] * len(found.sbp))
            self.found = found

    @contextlib.contextmanager
    def guarded(self, tensors):
        """An update of `tensors` in place that is undone when the gradients overflowed."""
        if self.found is None:
            yield
            return
        with flow.no_grad():
            before = [t.clone() for t in tensors]
        yield
        with flow.no_grad():
            for t, old in zip(tensors, before):
                t.copy_(flow.where(self.found, old, t))

    def outputs(self):
        """The graph's extra outputs: the overflow flag, for a dynamic scaler."""
        return [] if self.found is None else [self.found]


def host_counters(steps):
    """The optimizers' Python-side state (step counts) before a call's scalars advance it."""
    return [
        (opt.state[p], {k: v for k, v in opt.state[p].items() if not isinstance(v, flow.Tensor)})
        for opt, _, p in steps
    ]


def after_run(scaler, found, counters):
    """Updates the scaler from the call's overflow flag (None: none checked), as its eager
    step() and update() would; a skipped step's host counters go back."""
    if found is not None:
        local = found.to_local() if found.is_global else found
        scaler._found_inf = bool(local.numpy())
        if scaler._found_inf:
            for state, saved in counters:
                state.update(saved)
    scaler.update()
