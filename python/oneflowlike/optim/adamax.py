"""Adamax (Kingma and Ba, 2014): Adam with the infinity norm in place of the second moment."""

import oneflowlike as flow

from ._args import check_adam_args
from .optimizer import Optimizer, _no_differentiable, _weight_decay

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """As torch.optim.Adamax: m = lerp(m, g, 1 - b1); u = max(b2 u, |g| + eps);
    p -= lr / (1 - b1^t) m / u."""

    def __init__(
        self,
        params,
        lr=2e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        foreach=None,
        *,
        maximize=False,
        differentiable=False,
        capturable=False,
    ):
        check_adam_args(lr, betas, eps, weight_decay)
        _no_differentiable("Adamax", differentiable)
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            capturable=capturable,
        )
        super().__init__(params, defaults)

    def _init_param_state(self, group, param):
        return {"step": 0, "exp_avg": flow.zeros_like(param), "exp_inf": flow.zeros_like(param)}

    def _host(self, group, param, state):
        """[clr]: lr over the first moment's bias correction."""
        state["step"] += 1
        return [self._lr(group) / (1 - group["betas"][0] ** state["step"])]

    def _update(self, group, param, grad, state, scalars):
        (clr,) = scalars
        beta1, beta2 = group["betas"]
        grad = _weight_decay(group, param, grad)
        exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_inf.copy_(flow.maximum(exp_inf * beta2, grad.abs() + group["eps"]))
        param.sub_(exp_avg / exp_inf * clr)
