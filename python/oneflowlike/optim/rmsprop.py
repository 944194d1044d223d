"""RMSprop (Hinton): gradients scaled by a running root mean square, optionally centered and
with momentum."""

import oneflowlike as flow

from ._args import check_nonnegative
from .optimizer import Optimizer, _no_differentiable, _weight_decay

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """As torch.optim.RMSprop: v = alpha v + (1 - alpha) g^2 (centered: minus the running mean
    of g, squared); buf = momentum buf + g / (sqrt(v) + eps); p -= lr buf."""

    def __init__(
        self,
        params,
        lr=1e-2,
        alpha=0.99,
        eps=1e-8,
        weight_decay=0,
        momentum=0,
        centered=False,
        capturable=False,
        foreach=None,
        maximize=False,
        differentiable=False,
    ):
        check_nonnegative(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        _no_differentiable("RMSprop", differentiable)
        defaults = dict(
            lr=lr,
            momentum=momentum,
            alpha=alpha,
            eps=eps,
            centered=centered,
            weight_decay=weight_decay,
            capturable=capturable,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _init_param_state(self, group, param):
        state = {"step": 0, "square_avg": flow.zeros_like(param)}
        if group["momentum"] > 0:
            state["momentum_buffer"] = flow.zeros_like(param)
        if group["centered"]:
            state["grad_avg"] = flow.zeros_like(param)
        return state

    def _host(self, group, param, state):
        """[lr]."""
        state["step"] += 1
        return [self._lr(group)]

    def _update(self, group, param, grad, state, scalars):
        (lr,) = scalars
        alpha = group["alpha"]
        grad = _weight_decay(group, param, grad)
        square_avg = state["square_avg"]
        square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if group["centered"]:
            grad_avg = state["grad_avg"]
            grad_avg.lerp_(grad, 1 - alpha)
            avg = (square_avg - grad_avg * grad_avg).sqrt() + group["eps"]
        else:
            avg = square_avg.sqrt() + group["eps"]
        if group["momentum"] > 0:
            buf = state["momentum_buffer"]
            buf.mul_(group["momentum"]).addcdiv_(grad, avg)
            param.sub_(buf * lr)
        else:
            param.sub_(grad / avg * lr)
