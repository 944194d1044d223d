"""Rprop (Riedmiller and Braun, 1993): per-coordinate step sizes grown or shrunk by the sign
agreement of successive gradients."""

import oneflowlike as flow

from ._args import check_nonnegative
from .optimizer import Optimizer, _no_differentiable, _to_float

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """As torch.optim.Rprop: the step size times etaplus where g and the previous g agree in sign,
    times etaminus where they differ (and that coordinate's gradient is then taken as 0),
    clamped to step_sizes; p -= sign(g) step_size."""

    def __init__(
        self,
        params,
        lr=1e-2,
        etas=(0.5, 1.2),
        step_sizes=(1e-6, 50),
        *,
        capturable=False,
        foreach=None,
        maximize=False,
        differentiable=False,
    ):
        check_nonnegative(lr=lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        _no_differentiable("Rprop", differentiable)
        defaults = dict(
            lr=lr,
            etas=etas,
            step_sizes=step_sizes,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            capturable=capturable,
        )
        super().__init__(params, defaults)

    def _init_param_state(self, group, param):
        return {
            "step": 0,
            "prev": flow.zeros_like(param),
            "step_size": flow.zeros_like(param) + _to_float(group["lr"]),
        }

    def _host(self, group, param, state):
        state["step"] += 1
        return []

    def _update(self, group, param, grad, state, scalars):
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        prev, step_size = state["prev"], state["step_size"]
        sign = (grad * prev).sign()
        factor = flow.where(sign > 0, etaplus, flow.where(sign < 0, etaminus, flow.ones_like(sign)))
        step_size.mul_(factor).clamp_(step_size_min, step_size_max)
        grad = flow.where(sign < 0, 0.0, grad)
        param.sub_(grad.sign() * step_size)
        prev.copy_(grad)
