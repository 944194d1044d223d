"""Adagrad (Duchi et al., 2011): per-coordinate learning rates from the sum of squared
gradients."""

import oneflowlike as flow

from ._args import check_nonnegative
from .optimizer import Optimizer, _no_differentiable, _weight_decay

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """As torch.optim.Adagrad: s += g^2; p -= lr / (1 + (t - 1) lr_decay) g / (sqrt(s) + eps).
    As torch's, the state of every parameter exists from construction."""

    def __init__(
        self,
        params,
        lr=1e-2,
        lr_decay=0,
        weight_decay=0,
        initial_accumulator_value=0,
        eps=1e-10,
        foreach=None,
        *,
        maximize=False,
        differentiable=False,
        fused=None,
    ):
        check_nonnegative(
            lr=lr,
            lr_decay=lr_decay,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
            eps=eps,
        )
        _no_differentiable("Adagrad", differentiable)
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        defaults = dict(
            lr=lr,
            lr_decay=lr_decay,
            eps=eps,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            fused=fused,
        )
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p] = self._init_param_state(group, p)

    def _init_param_state(self, group, param):
        # torch reads the constructor's initial_accumulator_value, not the group's.
        value = self.defaults["initial_accumulator_value"]
        return {"step": 0, "sum": flow.zeros_like(param) + value}

    def _host(self, group, param, state):
        """[clr]: the decayed learning rate of this step."""
        state["step"] += 1
        return [self._lr(group) / (1 + (state["step"] - 1) * group["lr_decay"])]

    def _update(self, group, param, grad, state, scalars):
        (clr,) = scalars
        grad = _weight_decay(group, param, grad)
        state_sum = state["sum"]
        state_sum.addcmul_(grad, grad, value=1)
        param.sub_(grad / (state_sum.sqrt() + group["eps"]) * clr)
