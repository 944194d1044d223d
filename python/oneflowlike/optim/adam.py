"""Adam and AdamW (decoupled weight decay)."""

import math

import oneflowlike as flow
from oneflowlike import _C

from ._args import check_adam_args
from .optimizer import Optimizer, _no_differentiable


def _same_dtype(*tensors):
    return all(t.dtype == tensors[0].dtype for t in tensors)


def _fused(group, param):
    """fused=True: Adam's update as three fused ops (not with amsgrad), each one pass over the
    tensors where the unfused ones take a dozen; None, the default: so on the CPU and CUDA,
    whose kernels round as the unfused ops do."""
    if group["amsgrad"]:
        return False
    fused = group.get("fused")
    return param.device.type in ("cpu", "cuda") if fused is None else fused


def _master(group, param):
    """master_weights=True on a float16 / bfloat16 parameter: its update runs on a float32 copy
    (the master weight) with float32 moments, and the parameter is that copy rounded, as mixed-
    precision training holds them (2 + 2 + 4 + 4 + 4 = 16 bytes a parameter with its gradient)."""
    return group["master_weights"] and param.dtype in (flow.float16, flow.bfloat16)


class Adam(Optimizer):
    """As torch.optim.Adam; weight_decay adds an L2 term to the gradient (decoupled_weight_decay
    =True: AdamW's decay of the parameter instead). fused=True (the default on the CPU and
    CUDA) updates each parameter with three fused ops instead of a dozen.
    do_bias_correction=False (OneFlow's) leaves the moments without Adam's bias correction.
    master_weights=True (apex's FusedAdam) keeps a float32 master copy of each float16 / bfloat16
    parameter and float32 moments; the update runs on the copy, and the parameter is its
    rounding."""

    _elementwise_update = True  # (Optimizer._on_shards)

    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        amsgrad=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
        fused=None,
        decoupled_weight_decay=False,
        do_bias_correction=True,
        master_weights=False,
    ):
        check_adam_args(lr, betas, eps, weight_decay)
        _no_differentiable(type(self).__name__, differentiable)
        defaults = dict(
            lr=lr,
            betas=tuple(betas),
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=decoupled_weight_decay,
            do_bias_correction=do_bias_correction,
            master_weights=master_weights,
        )
        super().__init__(params, defaults)

    def _init_param_state(self, group, param):
        master = param.detach().float().clone() if _master(group, param) else None
        like = param if master is None else master
        state = {
            "step": 0,
            "exp_avg": flow.zeros_like(like),
            "exp_avg_sq": flow.zeros_like(like),
        }
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = flow.zeros_like(like)
        if master is not None:
            state["master"] = master
        return state

    def _state_dtype(self, group, param):
        return flow.float32 if _master(group, param) else param.dtype

    def _host(self, group, param, state):
        """Advances the step; [lr, 1 - lr * weight_decay, lr / bias_correction1,
        sqrt(bias_correction2)]."""
        state["step"] += 1
        step, lr = state["step"], self._lr(group)
        beta1, beta2 = group["betas"] if group["do_bias_correction"] else (0.0, 0.0)
        return [
            lr,
            1 - lr * group["weight_decay"],
            lr / (1 - beta1**step),
            math.sqrt(1 - beta2**step),
        ]

    def _update(self, group, param, grad, state, scalars):
        master = state.get("master")
        if master is None:
            self._adam(group, param, grad, state, scalars)
            return
        self._adam(group, master, grad.float(), state, scalars)
        param.copy_(master)

    def _adam(self, group, param, grad, state, scalars):
        _, decay, step_size, bias_correction2_sqrt = scalars
        beta1, beta2 = group["betas"]
        weight_decay = group["weight_decay"]
        decoupled_wd = group.get("decoupled_weight_decay", False)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        if weight_decay != 0 and not decoupled_wd:
            grad = grad + param * weight_decay
        if _fused(group, param) and _same_dtype(param, grad, exp_avg, exp_avg_sq):
            # Three fused ops for the dozen below (as many kernels, each over the whole tensor).
            _C.adam_moment_(exp_avg, grad, beta1)
            _C.adam_moment_(exp_avg_sq, grad, beta2, square=True)
            decoupled = decay if decoupled_wd else 1.0  # (Adam's L2 term is in grad)
            _C.adam_step_(
                param,
                exp_avg,
                exp_avg_sq,
                decoupled,
                step_size,
                bias_correction2_sqrt,
                group["eps"],
            )
            return
        if weight_decay != 0 and decoupled_wd:
            param.mul_(decay)
        exp_avg.mul_(beta1)
        exp_avg.add_(grad, alpha=1 - beta1)
        exp_avg_sq.mul_(beta2)
        exp_avg_sq.add_(grad * grad, alpha=1 - beta2)
        second = exp_avg_sq
        if group["amsgrad"]:
            state["max_exp_avg_sq"].copy_(flow.maximum(state["max_exp_avg_sq"], exp_avg_sq))
            second = state["max_exp_avg_sq"]
        denom = second.sqrt() / bias_correction2_sqrt + group["eps"]
        param.add_(exp_avg / denom * -step_size)


class AdamW(Adam):
    """As torch.optim.AdamW: Adam with decoupled_weight_decay=True, weight_decay 1e-2."""

    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=1e-2,
        amsgrad=False,
        *,
        maximize=False,
        foreach=None,
        capturable=False,
        differentiable=False,
        fused=None,
        do_bias_correction=True,
        master_weights=False,
    ):
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
            do_bias_correction=do_bias_correction,
            master_weights=master_weights,
        )
