"""SparseAdam: Adam that updates only the rows a sparse gradient touches (moments included)."""

import math

import oneflowlike as flow

from ._args import check_betas
from .optimizer import Optimizer

__all__ = ["SparseAdam"]


def _touched_rows(grad):
    """The rows of dim 0 a gradient touches, broadcastable over it. oneflowlike has no sparse
    tensors: a dense gradient stands for the sparse one (torch's grad.to_sparse(1), as
    nn.Embedding(sparse=True) makes) whose indices are its nonzero rows."""
    touched = grad != 0
    if grad.dim() > 1:
        touched = touched.reshape(grad.shape[0], -1).any(dim=1)
        touched = touched.reshape([grad.shape[0]] + [1] * (grad.dim() - 1))
    return touched


class SparseAdam(Optimizer):
    """As torch.optim.SparseAdam: the moments and the parameter change only in the rows the
    gradient touches; other rows keep their moments (not decayed, unlike Adam)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        check_betas(betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, maximize=maximize)
        super().__init__(params, defaults)

    def _init_param_state(self, group, param):
        return {"step": 0, "exp_avg": flow.zeros_like(param), "exp_avg_sq": flow.zeros_like(param)}

    def _host(self, group, param, state):
        """[step size]: lr sqrt(1 - b2^t) / (1 - b1^t)."""
        state["step"] += 1
        step = state["step"]
        beta1, beta2 = group["betas"]
        return [self._lr(group) * math.sqrt(1 - beta2**step) / (1 - beta1**step)]

    def _update(self, group, param, grad, state, scalars):
        (step_size,) = scalars
        beta1, beta2 = group["betas"]
        touched = _touched_rows(grad)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.copy_(flow.where(touched, exp_avg + (grad - exp_avg) * (1 - beta1), exp_avg))
        exp_avg_sq.copy_(
            flow.where(touched, exp_avg_sq + (grad * grad - exp_avg_sq) * (1 - beta2), exp_avg_sq)
        )
        update = exp_avg / (exp_avg_sq.sqrt() + group["eps"]) * step_size
        param.sub_(flow.where(touched, update, flow.zeros_like(update)))
