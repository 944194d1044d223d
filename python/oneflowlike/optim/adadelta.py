"""Adadelta (Zeiler, 2012): an adaptive learning rate from running averages of squared gradients
and squared updates."""

import oneflowlike as flow

from ._args import check_nonnegative
from .optimizer import Optimizer, _no_differentiable, _weight_decay

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """As torch.optim.Adadelta: v = rho v + (1 - rho) g^2; delta = sqrt(u + eps) / sqrt(v + eps)
    g; u = rho u + (1 - rho) delta^2; p -= lr delta."""

    def __init__(
        self,
        params,
        lr=1.0,
        rho=0.9,
        eps=1e-6,
        weight_decay=0,
        foreach=None,
        *,
        capturable=False,
        maximize=False,
        differentiable=False,
    ):
        check_nonnegative(lr=lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_nonnegative(eps=eps, weight_decay=weight_decay)
        _no_differentiable("Adadelta", differentiable)
        defaults = dict(
            lr=lr,
            rho=rho,
            eps=eps,
            weight_decay=weight_decay,
            maximize=maximize,
            capturable=capturable,
            foreach=foreach,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _init_param_state(self, group, param):
        return {
            "step": 0,
            "square_avg": flow.zeros_like(param),
            "acc_delta": flow.zeros_like(param),
        }

    def _host(self, group, param, state):
        """[lr]."""
        state["step"] += 1
        return [self._lr(group)]

    def _update(self, group, param, grad, state, scalars):
        (lr,) = scalars
        rho, eps = group["rho"], group["eps"]
        grad = _weight_decay(group, param, grad)
        square_avg, acc_delta = state["square_avg"], state["acc_delta"]
        square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
        delta = (acc_delta + eps).sqrt() / (square_avg + eps).sqrt() * grad
        acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
        param.sub_(delta * lr)
