"""RAdam (Liu et al., 2019): Adam whose adaptive step is rectified while the variance of the
adaptive learning rate is intractable (the first steps)."""

import math

import oneflowlike as flow

from ._args import check_adam_args
from .optimizer import Optimizer, _no_differentiable, _weight_decay

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """As torch.optim.RAdam (decoupled_weight_decay=True: RAdamW). While rho_t <= 5 the step is
    SGD with momentum, lr m / (1 - b1^t); after, Adam's step times the rectification r_t."""

    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        decoupled_weight_decay=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
    ):
        check_adam_args(lr, betas, eps, weight_decay)
        _no_differentiable("RAdam", differentiable)
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            decoupled_weight_decay=decoupled_weight_decay,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _init_param_state(self, group, param):
        return {"step": 0, "exp_avg": flow.zeros_like(param), "exp_avg_sq": flow.zeros_like(param)}

    def _host(self, group, param, state):
        """[lr, plain coefficient, adaptive coefficient]: one of the two is 0 (the rectified
        branch is chosen on the host, so that a graph computes both without a branch)."""
        state["step"] += 1
        step, lr = state["step"], self._lr(group)
        beta1, beta2 = group["betas"]
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
        if rho_t > 5.0:
            rect = (
                (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
            ) ** 0.5
            return [lr, 0.0, lr * math.sqrt(bias_correction2) * rect / bias_correction1]
        return [lr, lr / bias_correction1, 0.0]

    def _update(self, group, param, grad, state, scalars):
        lr, plain, adaptive = scalars
        beta1, beta2 = group["betas"]
        grad = _weight_decay(group, param, grad, lr)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        if isinstance(adaptive, float) and adaptive == 0.0:  # eager: only the branch taken
            param.sub_(exp_avg * plain)
        elif isinstance(plain, float) and plain == 0.0:
            param.sub_(exp_avg / (exp_avg_sq.sqrt() + group["eps"]) * adaptive)
        else:
            update = exp_avg * plain + exp_avg / (exp_avg_sq.sqrt() + group["eps"]) * adaptive
            param.sub_(update)
