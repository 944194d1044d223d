"""NAdam (Dozat, 2016): Adam with Nesterov momentum and a momentum-decay schedule."""

import oneflowlike as flow

from ._args import check_adam_args, check_nonnegative
from ._scalars import f32
from .optimizer import Optimizer, _no_differentiable, _weight_decay

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """As torch.optim.NAdam (decoupled_weight_decay=True: NAdamW). mu_product, the product of the
    momentum schedule, is a host number rounded to float32 as torch's state tensor holds it."""

    _host_keys = ("step", "mu_product")

    def __init__(
        self,
        params,
        lr=2e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        momentum_decay=4e-3,
        decoupled_weight_decay=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
    ):
        check_adam_args(lr, betas, eps, weight_decay)
        check_nonnegative(momentum_decay=momentum_decay)
        _no_differentiable("NAdam", differentiable)
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            momentum_decay=momentum_decay,
            decoupled_weight_decay=decoupled_weight_decay,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _init_param_state(self, group, param):
        return {
            "step": 0,
            "mu_product": 1.0,
            "exp_avg": flow.zeros_like(param),
            "exp_avg_sq": flow.zeros_like(param),
        }

    def _host(self, group, param, state):
        """[lr, bias_correction2, gradient coefficient, first-moment coefficient]."""
        state["step"] += 1
        step, lr = state["step"], self._lr(group)
        beta1, beta2 = group["betas"]
        decay = group["momentum_decay"]
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * decay)))
        state["mu_product"] = f32(f32(state["mu_product"]) * f32(mu))
        mu_product_next = state["mu_product"] * mu_next
        return [
            lr,
            1 - beta2**step,
            -lr * (1.0 - mu) / (1.0 - state["mu_product"]),
            (-lr * mu_next) / (1.0 - mu_product_next),
        ]

    def _update(self, group, param, grad, state, scalars):
        lr, bias_correction2, grad_coef, avg_coef = scalars
        beta1, beta2 = group["betas"]
        grad = _weight_decay(group, param, grad, lr)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = (exp_avg_sq / bias_correction2).sqrt() + group["eps"]
        param.add_(grad / denom * grad_coef)
        param.add_(exp_avg / denom * avg_coef)
