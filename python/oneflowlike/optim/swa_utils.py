"""Stochastic weight averaging (torch.optim.swa_utils): AveragedModel keeps a running average
(SWA or EMA) of a model's parameters, SWALR anneals to a constant SWA learning rate, update_bn
recomputes BatchNorm statistics for the averaged weights."""

import itertools
import math
from copy import deepcopy

import oneflowlike as flow
from oneflowlike.nn import Module

from ._lr_base import LRScheduler, _format_param, _warn_get_lr_called_within_step

__all__ = [
    "AveragedModel",
    "update_bn",
    "SWALR",
    "get_ema_multi_avg_fn",
    "get_swa_multi_avg_fn",
    "get_ema_avg_fn",
    "get_swa_avg_fn",
]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(
            f"Invalid decay value {decay} provided. Please provide a value in [0,1] range."
        )


def get_ema_multi_avg_fn(decay=0.999):
    """In place on lists: ema = lerp(ema, current, 1 - decay)."""
    _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _):
        with flow.no_grad():
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                if p_ema.dtype.is_floating_point:
                    p_ema.lerp_(p_model, 1 - decay)
                else:
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """In place on lists: avg += (current - avg) / (n + 1)."""

    def swa_update(averaged_param_list, current_param_list, num_averaged):
        n = int(num_averaged.item()) if isinstance(num_averaged, flow.Tensor) else num_averaged
        with flow.no_grad():
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                if p_avg.dtype.is_floating_point:
                    p_avg.lerp_(p_model, 1 / (n + 1))
                else:
                    p_avg.copy_(p_avg + (p_model - p_avg) / (n + 1))

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """Returns decay * ema + (1 - decay) * current."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with flow.no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """Returns avg + (current - avg) / (n + 1)."""

    def swa_update(averaged_param, current_param, num_averaged):
        with flow.no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A deep copy of `model` whose parameters (and buffers, use_buffers=True) become running
    averages at each update_parameters(model): the equal-weight SWA average by default, or
    avg_fn (one tensor at a time) / multi_avg_fn (lists, in place). n_averaged counts updates."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        n_averaged = flow.tensor(0, dtype=flow.int64)
        self.register_buffer("n_averaged", n_averaged if device is None else n_averaged.to(device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        if self.use_buffers:
            self_param = itertools.chain(self.module.parameters(), self.module.buffers())
            model_param = itertools.chain(model.parameters(), model.buffers())
        else:
            self_param, model_param = self.parameters(), model.parameters()
        n_averaged = int(self.n_averaged.item())
        averaged, current = [], []
        with flow.no_grad():
            for p_averaged, p_model in zip(self_param, model_param):
                p_model_ = p_model.detach().to(p_averaged.device)
                averaged.append(p_averaged.detach())
                current.append(p_model_)
                if n_averaged == 0:
                    p_averaged.detach().copy_(p_model_)
            if n_averaged > 0:
                if self.avg_fn is None:
                    multi_avg_fn = self.multi_avg_fn or get_swa_multi_avg_fn()
                    by_dtype = {}
                    for a, c in zip(averaged, current):
                        by_dtype.setdefault((str(a.device), a.dtype), ([], []))
                        by_dtype[(str(a.device), a.dtype)][0].append(a)
                        by_dtype[(str(a.device), a.dtype)][1].append(c)
                    for group_averaged, group_current in by_dtype.values():
                        multi_avg_fn(group_averaged, group_current, self.n_averaged.clone())
                else:
                    for a, c in zip(averaged, current):
                        a.copy_(self.avg_fn(a, c, self.n_averaged.clone()))
            if not self.use_buffers:
                # the buffers (BatchNorm statistics) follow the model; update_bn recomputes them
                for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                    b_swa.detach().copy_(b_model.detach().to(b_swa.device))
            self.n_averaged.add_(1)


def _is_batchnorm(module):
    """torch's isinstance(module, _BatchNorm), by the BatchNorm classes' common base."""
    bases = [getattr(flow.nn, n, None) for n in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d")]
    bases = tuple(b.__mro__[1] for b in bases if b is not None)
    sync = getattr(flow.nn, "SyncBatchNorm", None)
    return isinstance(module, bases + ((sync,) if sync is not None else ()))


def update_bn(loader, model, device=None):
    """One pass over `loader` in training mode with cumulative averages (momentum None) to
    recompute every BatchNorm's running statistics; the first element of list/tuple batches is
    the input."""
    momenta = {}
    for module in model.modules():
        if _is_batchnorm(module):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with flow.no_grad():
        for input in loader:
            if isinstance(input, (list, tuple)):
                input = input[0]
            if device is not None:
                input = input.to(device)
            model(input)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's lr to swa_lr over anneal_epochs ('cos' or 'linear'), then holds
    it."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [
            self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
            for group in self.optimizer.param_groups
        ]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [
            group["swa_lr"] * alpha + lr * (1 - alpha)
            for group, lr in zip(self.optimizer.param_groups, prev_lrs)
        ]

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
        self._restore_lr()
