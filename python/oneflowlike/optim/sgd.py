"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

import oneflowlike as flow

from .optimizer import Optimizer, _no_differentiable, _weight_decay, required


class SGD(Optimizer):
    """As torch.optim.SGD: buf = m * buf + (1 - dampening) * g; p -= lr * (g + m * buf or buf)."""

    _elementwise_update = True  # (Optimizer._on_shards)

    def __init__(
        self,
        params,
        lr=1e-3,
        momentum=0,
        dampening=0,
        weight_decay=0,
        nesterov=False,
        *,
        maximize=False,
        foreach=None,
        differentiable=False,
        fused=None,
    ):
        _no_differentiable("SGD", differentiable)
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(
            lr=lr,
            momentum=momentum,
            dampening=dampening,
            weight_decay=weight_decay,
            nesterov=nesterov,
            maximize=maximize,
            foreach=foreach,
            differentiable=differentiable,
            fused=fused,
        )
        super().__init__(params, defaults)

    def _init_param_state(self, group, param):
        # The buffer starts as the first gradient: _host's first coefficients are (0, 1).
        if group["momentum"] == 0:
            return {}
        return {"momentum_buffer": flow.zeros_like(param), "_started": False}

    def _host(self, group, param, state):
        """[lr, buffer decay, gradient coefficient]: (0, 1) on the buffer's first step."""
        if group["momentum"] == 0:
            return [self._lr(group), 0.0, 0.0]
        first = not state.get("_started", True)  # (a checkpoint's buffer has started)
        state["_started"] = True
        return [
            self._lr(group),
            0.0 if first else group["momentum"],
            1.0 if first else 1 - group["dampening"],
        ]

    def _update(self, group, param, grad, state, scalars):
        lr, decay, coefficient = scalars
        momentum = group["momentum"]
        grad = _weight_decay(group, param, grad)
        if momentum != 0:
            buf = state["momentum_buffer"]
            buf.mul_(decay)
            buf.add_(grad * coefficient)
            grad = grad + buf * momentum if group["nesterov"] else buf
        param.add_(grad * -lr)
