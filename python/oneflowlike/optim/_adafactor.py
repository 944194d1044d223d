"""Adafactor (Shazeer and Stern, 2018): second moments factored into row and column averages for
matrices, and updates scaled by the parameter's RMS."""

import math

import oneflowlike as flow

from .optimizer import Optimizer

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """As torch.optim.Adafactor: for a parameter of 2 or more dimensions the running variance is
    row_var @ col_var / mean(row_var); a vector keeps a full one. The update is g / sqrt(var),
    divided by max(1, RMS(update) / d) and scaled by max(eps2, RMS(p)) min(lr, 1 / sqrt(t))."""

    def __init__(
        self,
        params,
        lr=1e-2,
        beta2_decay=-0.8,
        eps=(None, 1e-3),
        d=1.0,
        weight_decay=0.0,
        *,
        foreach=None,
        maximize=False,
    ):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(
            lr=lr,
            beta2_decay=beta2_decay,
            eps=eps,
            d=d,
            weight_decay=weight_decay,
            foreach=foreach,
            maximize=maximize,
        )
        super().__init__(params, defaults)

    def _init_param_state(self, group, param):
        if param.dim() > 1:
            row_shape, col_shape = list(param.shape), list(param.shape)
            row_shape[-1] = 1
            col_shape[-2] = 1
            return {
                "step": 0,
                "row_var": flow.zeros(row_shape, dtype=param.dtype, device=param.device),
                "col_var": flow.zeros(col_shape, dtype=param.dtype, device=param.device),
            }
        return {"step": 0, "variance": flow.zeros_like(param)}

    def _host(self, group, param, state):
        """[lr, 1 - beta2_t, rho_t]."""
        state["step"] += 1
        step, lr = state["step"], self._lr(group)
        return [lr, float(step) ** group["beta2_decay"], min(lr, 1 / (step**0.5))]

    def _update(self, group, param, grad, state, scalars):
        lr, one_minus_beta2_t, rho_t = scalars
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = flow.finfo(param.dtype).eps
        rms = (param * param).sum().sqrt() / math.sqrt(param.numel())
        alpha = flow.clamp(rms, min=eps2) * rho_t
        if group["weight_decay"] != 0:
            param.mul_(1 - lr * group["weight_decay"])
        if grad.dim() > 1:
            row_var, col_var = state["row_var"], state["col_var"]
            row_var.lerp_(
                (grad * grad).sum(dim=-1, keepdim=True) / grad.shape[-1], one_minus_beta2_t
            )
            col_var.lerp_(
                (grad * grad).sum(dim=-2, keepdim=True) / grad.shape[-2], one_minus_beta2_t
            )
            var_estimate = row_var @ col_var
            var_estimate = var_estimate / flow.clamp(row_var.mean(dim=-2, keepdim=True), min=eps1)
        else:
            variance = state["variance"]
            variance.lerp_(grad * grad, one_minus_beta2_t)
            var_estimate = variance
        update = flow.clamp(var_estimate, min=eps1 * eps1).rsqrt() * grad
        update_rms = (update * update).sum().sqrt() / (math.sqrt(update.numel()) * group["d"])
        param.sub_(update * (alpha / flow.clamp(update_rms, min=1.0)))
