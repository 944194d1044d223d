"""Activation checkpointing: run a function without keeping the activations its backward would
need, and recompute them during backward (torch.utils.checkpoint's reentrant form)."""

import oneflowlike as flow
from oneflowlike import _C


def checkpoint(function, *args, params=()):
    """function(*args), keeping only its inputs for backward. `params`: tensors the function
    reads besides its arguments (a module's parameters) that need gradients too. Random draws
    inside are replayed from the same generator state when recomputing (in graph mode, the
    recomputed random nodes take the forward's draws at every run)."""
    tensors = [a for a in args if isinstance(a, flow.Tensor)]
    params = list(params)
    if not flow.is_grad_enabled() or not any(t.requires_grad for t in tensors + params):
        return function(*args)
    gen = flow.default_generator()
    state = gen.get_state()
    with flow.no_grad():
        output = function(*args)
    outputs = list(output) if isinstance(output, (tuple, list)) else [output]

    def backward(grads, needs):
        after = gen.get_state()
        gen.set_state(state)  # the same draws as the forward
        try:
            inputs = [
                a.detach().requires_grad_(a.requires_grad) if isinstance(a, flow.Tensor) else a
                for a in args
            ]
            with flow.enable_grad():
                again = function(*inputs)
        finally:
            gen.set_state(after)
        again = list(again) if isinstance(again, (tuple, list)) else [again]
        pairs = [(o, g) for o, g in zip(again, grads) if g is not None and o.requires_grad]
        leaves = [x for x in inputs if isinstance(x, flow.Tensor)] + params
        wrt = [x for x, need in zip(leaves, needs) if need]
        got = iter(
            flow.autograd.grad([o for o, _ in pairs], wrt, [g for _, g in pairs], allow_unused=True)
            if pairs and wrt
            else [None] * len(wrt)
        )
        return [next(got) if need else None for need in needs]

    _C.record_function("checkpoint", tensors + params, outputs, backward)
    return output
