"""Functional optimizer API (torch.optim.functional): one update of lists of parameters,
gradients and states, run by the same per-parameter code as the optimizer classes."""

import oneflowlike as flow

from ._adafactor import Adafactor
from ._muon import Muon
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .asgd import ASGD
from .nadam import NAdam
from .optimizer import _no_differentiable
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = [
    "adadelta",
    "adafactor",
    "adagrad",
    "adam",
    "adamax",
    "adamw",
    "asgd",
    "muon",
    "nadam",
    "radam",
    "rmsprop",
    "rprop",
    "sgd",
    "sparse_adam",
]


def _number(value):
    return value.item() if isinstance(value, flow.Tensor) else value


def _write(target, value):
    """A host counter written back into torch's 0-d state tensor (in place, as torch does)."""
    if isinstance(target, flow.Tensor):
        target.fill_(value)


def _run(cls, group, params, grads, states, scalars=("step",), increment=True):
    """Runs cls's update on each parameter. states: {state key: list}; the keys in `scalars`
    are host numbers (0-d tensors or numbers in the lists, updated in place)."""
    with flow.no_grad():
        opt = cls.__new__(cls)
        maximize = group.get("maximize", False)
        for i, (param, grad) in enumerate(zip(params, grads)):
            state = {key: values[i] for key, values in states.items() if values[i] is not None}
            for key in scalars:
                if key in state:
                    state[key] = _number(state[key])
            if not increment:
                state["step"] -= 1  # (the caller advanced it already)
            out = opt._host(group, param, state)
            opt._update(group, param, -grad if maximize else grad, state, out)
            for key in scalars:
                if key in states and not isinstance(states[key][i], flow.Tensor):
                    states[key][i] = state[key]
                elif key in states:
                    _write(states[key][i], state[key])


def _common(name, differentiable=False):
    _no_differentiable(name, differentiable)


def adadelta(params, grads, square_avgs, acc_deltas, state_steps, capturable=False,
             foreach=None, differentiable=False, has_complex=False, *, lr, rho, eps,
             weight_decay, maximize):  # fmt: skip
    _common("adadelta", differentiable)
    group = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize)
    states = dict(square_avg=square_avgs, acc_delta=acc_deltas, step=state_steps)
    _run(Adadelta, group, params, grads, states)


def adafactor(params, grads, row_vars, col_vars, variances, state_steps, foreach=None,
              grad_scale=None, found_inf=None, has_complex=False, *, d, lr, beta2_decay,
              weight_decay, eps1, eps2, maximize):  # fmt: skip
    if grad_scale is not None or found_inf is not None:
        raise NotImplementedError("adafactor: grad_scale / found_inf are not supported")
    group = dict(lr=lr, beta2_decay=beta2_decay, eps=(eps1, eps2), d=d,
                 weight_decay=weight_decay, maximize=maximize)  # fmt: skip
    states = dict(row_var=row_vars, col_var=col_vars, variance=variances, step=state_steps)
    _run(Adafactor, group, params, grads, states)


def adagrad(params, grads, state_sums, state_steps, fused=None, grad_scale=None,
            found_inf=None, has_sparse_grad=False, foreach=None, differentiable=False,
            has_complex=False, *, lr, weight_decay, lr_decay, eps, maximize):  # fmt: skip
    _common("adagrad", differentiable)
    if grad_scale is not None or found_inf is not None:
        raise NotImplementedError("adagrad: grad_scale / found_inf are not supported")
    group = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay, maximize=maximize)
    _run(Adagrad, group, params, grads, dict(sum=state_sums, step=state_steps))


def _adam(name, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
          differentiable, grad_scale, found_inf, decoupled_weight_decay, amsgrad, beta1, beta2,
          lr, weight_decay, eps, maximize):  # fmt: skip
    _common(name, differentiable)
    if grad_scale is not None or found_inf is not None:
        raise NotImplementedError(f"{name}: grad_scale / found_inf are not supported")
    group = dict(lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay,
                 amsgrad=amsgrad, maximize=maximize, fused=False,
                 decoupled_weight_decay=decoupled_weight_decay, do_bias_correction=True,
                 master_weights=False)  # fmt: skip
    maxes = max_exp_avg_sqs if amsgrad else [None] * len(params)
    states = dict(exp_avg=exp_avgs, exp_avg_sq=exp_avg_sqs, max_exp_avg_sq=maxes, step=state_steps)
    _run(Adam, group, params, grads, states)


def adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None,
         capturable=False, differentiable=False, fused=None, grad_scale=None, found_inf=None,
         has_complex=False, decoupled_weight_decay=False, *, amsgrad, beta1, beta2, lr,
         weight_decay, eps, maximize):  # fmt: skip
    _adam("adam", params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
          differentiable, grad_scale, found_inf, decoupled_weight_decay, amsgrad, beta1, beta2,
          lr, weight_decay, eps, maximize)  # fmt: skip


def adamw(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None,
          capturable=False, differentiable=False, fused=None, grad_scale=None, found_inf=None,
          has_complex=False, *, amsgrad, beta1, beta2, lr, weight_decay, eps,
          maximize):  # fmt: skip
    _adam("adamw", params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
          differentiable, grad_scale, found_inf, True, amsgrad, beta1, beta2, lr, weight_decay,
          eps, maximize)  # fmt: skip


def adamax(params, grads, exp_avgs, exp_infs, state_steps, foreach=None, maximize=False,
           differentiable=False, capturable=False, has_complex=False, *, eps, beta1, beta2, lr,
           weight_decay):  # fmt: skip
    _common("adamax", differentiable)
    group = dict(lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay,
                 maximize=maximize)  # fmt: skip
    _run(Adamax, group, params, grads, dict(exp_avg=exp_avgs, exp_inf=exp_infs, step=state_steps))


def asgd(params, grads, axs, mus, etas, state_steps, foreach=None, maximize=False,
         differentiable=False, capturable=False, has_complex=False, *, lambd, lr, t0, alpha,
         weight_decay):  # fmt: skip
    _common("asgd", differentiable)
    group = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                 maximize=maximize)  # fmt: skip
    states = dict(ax=axs, mu=mus, eta=etas, step=state_steps)
    _run(ASGD, group, params, grads, states, scalars=("step", "eta", "mu"))


def muon(params, grads, muon_momentum_bufs, *, foreach=None, lr, weight_decay, momentum,
         nesterov, ns_coefficients, ns_steps, eps, adjust_lr_fn, has_complex):  # fmt: skip
    if has_complex:
        raise ValueError("Complex parameters are not supported")
    group = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                 ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps,
                 adjust_lr_fn=adjust_lr_fn)  # fmt: skip
    _run(Muon, group, params, grads, dict(momentum_buffer=muon_momentum_bufs), scalars=())


def nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps,
          decoupled_weight_decay=False, foreach=None, capturable=False, differentiable=False,
          has_complex=False, maximize=False, *, beta1, beta2, lr, weight_decay, momentum_decay,
          eps):  # fmt: skip
    _common("nadam", differentiable)
    group = dict(lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay,
                 momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                 maximize=maximize)  # fmt: skip
    states = dict(exp_avg=exp_avgs, exp_avg_sq=exp_avg_sqs, mu_product=mu_products,
                  step=state_steps)  # fmt: skip
    _run(NAdam, group, params, grads, states, scalars=("step", "mu_product"))


def radam(params, grads, exp_avgs, exp_avg_sqs, state_steps, decoupled_weight_decay=False,
          foreach=None, differentiable=False, capturable=False, has_complex=False,
          maximize=False, *, beta1, beta2, lr, weight_decay, eps):  # fmt: skip
    _common("radam", differentiable)
    group = dict(lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay,
                 decoupled_weight_decay=decoupled_weight_decay, maximize=maximize)  # fmt: skip
    states = dict(exp_avg=exp_avgs, exp_avg_sq=exp_avg_sqs, step=state_steps)
    _run(RAdam, group, params, grads, states)


def rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps,
            foreach=None, maximize=False, differentiable=False, capturable=False,
            has_complex=False, *, lr, alpha, eps, weight_decay, momentum,
            centered):  # fmt: skip
    _common("rmsprop", differentiable)
    group = dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                 centered=centered, maximize=maximize)  # fmt: skip
    n = len(params)
    states = dict(square_avg=square_avgs, step=state_steps,
                  grad_avg=grad_avgs if centered else [None] * n,
                  momentum_buffer=momentum_buffer_list if momentum > 0 else [None] * n)  # fmt: skip
    _run(RMSprop, group, params, grads, states)


def rprop(params, grads, prevs, step_sizes, state_steps, foreach=None, capturable=False,
          maximize=False, differentiable=False, has_complex=False, *, step_size_min,
          step_size_max, etaminus, etaplus):  # fmt: skip
    _common("rprop", differentiable)
    group = dict(etas=(etaminus, etaplus), step_sizes=(step_size_min, step_size_max),
                 maximize=maximize)  # fmt: skip
    _run(Rprop, group, params, grads, dict(prev=prevs, step_size=step_sizes, step=state_steps))


def sgd(params, d_p_list, momentum_buffer_list, has_sparse_grad=False, foreach=None,
        fused=None, grad_scale=None, found_inf=None, *, weight_decay, momentum, lr, dampening,
        nesterov, maximize):  # fmt: skip
    """A None momentum buffer starts as the gradient; the new buffer is stored in the list."""
    if grad_scale is not None or found_inf is not None:
        raise NotImplementedError("sgd: grad_scale / found_inf are not supported")
    group = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                 nesterov=nesterov, maximize=maximize)  # fmt: skip
    opt = SGD.__new__(SGD)
    with flow.no_grad():
        for i, (param, grad) in enumerate(zip(params, d_p_list)):
            state = {}
            if momentum != 0:
                buf = momentum_buffer_list[i]
                state = {"momentum_buffer": buf, "_started": True}
                if buf is None:
                    state = opt._init_param_state(group, param)
            opt._update(group, param, -grad if maximize else grad, state,
                        opt._host(group, param, state))  # fmt: skip
            if momentum != 0:
                momentum_buffer_list[i] = state["momentum_buffer"]


def sparse_adam(params, grads, exp_avgs, exp_avg_sqs, state_steps, *, eps, beta1, beta2, lr,
                maximize):  # fmt: skip
    """state_steps are the already-advanced step counts (as torch's)."""
    group = dict(lr=lr, betas=(beta1, beta2), eps=eps, maximize=maximize)
    states = dict(exp_avg=exp_avgs, exp_avg_sq=exp_avg_sqs, step=list(state_steps))
    _run(SparseAdam, group, params, grads, states, increment=False)
