"""Muon (Jordan et al., 2024): momentum whose update is orthogonalized by a Newton-Schulz
iteration, for 2-d parameters."""

import math

import oneflowlike as flow

from .optimizer import Optimizer

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps, eps):
    """The quintic Newton-Schulz iteration towards U V^T of grad = U S V^T, in bfloat16 as
    torch runs it."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    bf16, f32 = flow.bfloat16, flow.float32
    # each product is accumulated in float32 and rounded to bfloat16 once, as torch's addmm
    ortho = grad.to(bf16)
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        ortho = ortho.T
    norm = (ortho.to(f32) * ortho.to(f32)).sum().sqrt().to(bf16).to(f32)
    ortho = (ortho.to(f32) / flow.clamp(norm, min=eps)).to(bf16)
    for _ in range(ns_steps):
        o = ortho.to(f32)
        gram = (o @ o.T).to(bf16).to(f32)
        gram_update = (gram * b + (gram @ gram) * c).to(bf16).to(f32)
        ortho = (o * a + gram_update @ o).to(bf16)
    return ortho.T if tall else ortho


def _adjust_lr(lr, adjust_lr_fn, param_shape):
    """Muon's learning-rate scale for a (fan-out, fan-in) matrix."""
    A, B = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, A / B))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(A, B))
    elif adjust_lr_fn == "spectral_unclamped":
        ratio = math.sqrt(A / B)
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """As torch.optim.Muon: buf = lerp(buf, g, 1 - momentum); the update (g lerped towards buf
    under nesterov) orthogonalized by Newton-Schulz; p = p (1 - lr wd) - adjusted_lr update."""

    def __init__(
        self,
        params,
        lr=1e-3,
        weight_decay=0.1,
        momentum=0.95,
        nesterov=True,
        ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C),
        eps=EPS,
        ns_steps=DEFAULT_NS_STEPS,
        adjust_lr_fn=None,
    ):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in [
            "original",
            "match_rms_adamw",
            "spectral_unclamped",
        ]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(
            lr=lr,
            weight_decay=weight_decay,
            momentum=momentum,
            nesterov=nesterov,
            ns_coefficients=ns_coefficients,
            eps=eps,
            ns_steps=ns_steps,
            adjust_lr_fn=adjust_lr_fn,
        )
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError(
                        "Muon only supports 2D parameters whereas we found a parameter with "
                        f"size: {tuple(p.shape)}"
                    )

    def _init_param_state(self, group, param):
        return {"momentum_buffer": flow.zeros_like(param)}

    def _host(self, group, param, state):
        """[lr, adjusted lr]."""
        lr = self._lr(group)
        return [lr, _adjust_lr(lr, group["adjust_lr_fn"], tuple(param.shape))]

    def _update(self, group, param, grad, state, scalars):
        lr, adjusted_lr = scalars
        if grad.dim() != 2:
            raise ValueError("Param gradient must be a 2D matrix")
        momentum = group["momentum"]
        buf = state["momentum_buffer"]
        buf.lerp_(grad, 1 - momentum)
        update = grad.lerp(buf, momentum) if group["nesterov"] else buf
        update = _zeropower_via_newtonschulz(
            update, group["ns_coefficients"], group["ns_steps"], group["eps"]
        )
        param.mul_(1 - lr * group["weight_decay"])
        param.sub_(update.to(param.dtype) * adjusted_lr)
