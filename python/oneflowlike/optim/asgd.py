"""Averaged SGD (Polyak and Juditsky, 1992): SGD with a decaying step and a running average of
the iterates (state 'ax')."""

import oneflowlike as flow

from ._args import check_nonnegative
from ._scalars import f32
from .optimizer import Optimizer, _no_differentiable, _to_float, _weight_decay

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """As torch.optim.ASGD: p = p (1 - lambd eta) - eta g; ax += mu (p - ax); then
    eta = lr / (1 + lambd lr t)^alpha and mu = 1 / max(1, t - t0). eta and mu are host numbers
    rounded to float32, as torch's float32 state tensors hold them."""

    _host_keys = ("step", "eta", "mu")

    def __init__(
        self,
        params,
        lr=1e-2,
        lambd=1e-4,
        alpha=0.75,
        t0=1e6,
        weight_decay=0,
        foreach=None,
        maximize=False,
        differentiable=False,
        capturable=False,
    ):
        check_nonnegative(lr=lr, lambd=lambd, alpha=alpha, weight_decay=weight_decay)
        _no_differentiable("ASGD", differentiable)
        defaults = dict(
            lr=lr,
            lambd=lambd,
            alpha=alpha,
            t0=t0,
            weight_decay=weight_decay,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            capturable=capturable,
        )
        super().__init__(params, defaults)

    def _init_param_state(self, group, param):
        return {
            "step": 0,
            "eta": f32(_to_float(group["lr"])),
            "mu": 1.0,
            "ax": flow.zeros_like(param),
        }

    def _host(self, group, param, state):
        """[eta, mu] of this step; advances them for the next."""
        eta, mu = state["eta"], state["mu"]
        state["step"] += 1
        step, lr = state["step"], self._lr(group)
        state["eta"] = f32(lr / ((1 + group["lambd"] * lr * step) ** group["alpha"]))
        state["mu"] = f32(1 / max(1, step - group["t0"]))
        return [eta, mu]

    def _update(self, group, param, grad, state, scalars):
        eta, mu = scalars
        grad = _weight_decay(group, param, grad)
        param.mul_(1 - group["lambd"] * eta)
        param.sub_(grad * eta)
        ax = state["ax"]
        if isinstance(mu, (int, float)) and mu == 1:
            ax.copy_(param)
        else:
            ax.add_((param - ax) * mu)
