"""Gradient utilities: clipping (torch.nn.utils.clip_grad_norm_ / clip_grad_value_), clearing."""

import math

import oneflowlike as flow

from . import rnn

__all__ = ["clip_grad_norm_", "clip_grad_value_", "rnn", "zero_grads"]


def _grads(parameters):
    if isinstance(parameters, flow.Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scales all grads together so that their joint norm is at most max_norm; returns the norm.
    Tensor ops only (the scale is min(1, max_norm / (norm + 1e-6)), as PyTorch's), so that it
    traces into an nn.Graph; only error_if_nonfinite reads the norm on the host."""
    grads = _grads(parameters)
    if not grads:
        return flow.tensor(0.0)
    norm_type = float(norm_type)
    # float64 gradients keep float64 (torch's norm has the gradients' dtype); others sum in float32
    acc = flow.float64 if any(g.dtype == flow.float64 for g in grads) else flow.float32
    with flow.no_grad():
        if math.isinf(norm_type):
            norms = [flow.abs(g.to(acc)).max() for g in grads]
            total = norms[0]
            for norm in norms[1:]:
                total = flow.maximum(total, norm)
        else:
            total = sum((flow.abs(g.to(acc)) ** norm_type).sum() for g in grads)
            total = total ** (1.0 / norm_type)
        if error_if_nonfinite and not math.isfinite(total.item()):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients is non-finite, "
                "so it cannot be clipped"
            )
        coef = flow.clamp(float(max_norm) / (total + 1e-6), max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))
    return total


def clip_grad_value_(parameters, clip_value):
    """Clamps every gradient element into [-clip_value, clip_value]."""
    with flow.no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)


def zero_grads(params, set_to_none=True):
    """Clears the gradients of `params`: drops them, or zeroes them in place."""
    for param in params:
        if param.grad is None:
            continue
        if set_to_none:
            param.grad = None
        else:
            with flow.no_grad():
                param.grad.zero_()
