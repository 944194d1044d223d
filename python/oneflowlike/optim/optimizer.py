"""Optimizer base class (torch.optim.Optimizer semantics, state keyed by parameter)."""

import copy
import functools
from collections import OrderedDict
from collections.abc import MutableMapping

import oneflowlike as flow
from oneflowlike.nn.module import RemovableHandle
from oneflowlike.nn.utils import zero_grads


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()


class ParamState(MutableMapping):
    """A dict keyed by tensor identity (tensors define ==, so they cannot key a plain dict)."""

    def __init__(self):
        self._items = {}

    def __getitem__(self, param):
        try:
            return self._items[id(param)][1]
        except KeyError:
            raise KeyError(param) from None

    def __setitem__(self, param, value):
        self._items[id(param)] = (param, value)

    def __delitem__(self, param):
        del self._items[id(param)]

    def __iter__(self):
        return (param for param, _ in self._items.values())

    def __len__(self):
        return len(self._items)

    def __contains__(self, param):
        return id(param) in self._items

    def __repr__(self):
        return f"ParamState({len(self)} entries)"


def _use_grad(step):
    """Runs an optimizer step under no_grad (the closure re-enables grad itself)."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        with flow.no_grad():
            return step(self, *args, **kwargs)

    return wrapper


_global_step_pre_hooks = OrderedDict()
_global_step_post_hooks = OrderedDict()


def _register(hooks, hook, prepend=False):
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def register_optimizer_step_pre_hook(hook):
    """hook(optimizer, args, kwargs) before every optimizer's step (torch's global hook)."""
    return _register(_global_step_pre_hooks, hook)


def register_optimizer_step_post_hook(hook):
    """hook(optimizer, args, kwargs) after every optimizer's step."""
    return _register(_global_step_post_hooks, hook)


def _with_step_hooks(step):
    """Runs the global and the optimizer's own step hooks around `step` (torch's
    profile_hook_step); a pre hook may return new (args, kwargs)."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        own_pre = getattr(self, "_optimizer_step_pre_hooks", {})
        for hook in [*_global_step_pre_hooks.values(), *own_pre.values()]:
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(
                        f"{hook} must return None or a tuple of (new_args, new_kwargs), "
                        f"but got {result}."
                    )
                args, kwargs = result
        out = step(self, *args, **kwargs)
        own_post = getattr(self, "_optimizer_step_post_hooks", {})
        for hook in [*own_post.values(), *_global_step_post_hooks.values()]:
            hook(self, args, kwargs)
        return out

    wrapper._hooked = True
    return wrapper


def _to_float(value):
    """A tensor learning rate (torch accepts one-element tensors) as a Python float."""
    if isinstance(value, flow.Tensor):
        if value.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        return float(value.item())
    return value


def _weight_decay(group, param, grad, lr=None):
    """The group's weight decay: torch's L2 term, grad + weight_decay * param (the gradient
    returned), or, where the group has decoupled_weight_decay, param *= 1 - lr * weight_decay."""
    weight_decay = group["weight_decay"]
    if weight_decay == 0:
        return grad
    if group.get("decoupled_weight_decay"):
        param.mul_(1 - lr * weight_decay)
        return grad
    return grad + param * weight_decay


def _no_differentiable(name, differentiable):
    if differentiable:
        raise NotImplementedError(
            f"[{name}] differentiable=True is not supported: steps run under no_grad"
        )


# The parameter-group keys OneFlow's and PyTorch's optimizers read. A group naming one that this
# optimizer does not honour raises (a silently ignored hyper-parameter trains the wrong model);
# keys outside this list are the caller's own metadata (a name, timm's param_names) and stay.
_KNOWN_KEYS = {
    "lr", "lr_scale", "momentum", "dampening", "nesterov", "betas", "eps", "weight_decay",
    "amsgrad", "maximize", "do_bias_correction", "clip_grad_max_norm", "clip_grad_norm_type",
    "alpha", "centered", "lambd", "lr_decay", "initial_accumulator_value", "adam_w_mode",
    "decoupled_weight_decay", "master_weights", "rho", "etas", "step_sizes", "t0",
    "momentum_decay", "beta2_decay", "max_iter", "max_eval", "tolerance_grad",
    "tolerance_change", "history_size", "line_search_fn", "ns_coefficients", "ns_steps",
    "adjust_lr_fn",
}  # fmt: skip
# Keys every optimizer here honours: lr_scale multiplies the group's lr (after any scheduler);
# clip_grad_max_norm / clip_grad_norm_type clip the group's gradients by their joint norm before
# its update, in eager steps and in nn.Graph alike.
_COMMON_KEYS = {
    "params", "initial_lr", "lr_scale", "clip_grad_max_norm", "clip_grad_norm_type", "param_names",
}  # fmt: skip


class Optimizer:
    """Holds param_groups (dicts with 'params' plus hyper-parameters) and per-parameter state."""

    # Keys of a parameter's state that live on the host as Python numbers (torch keeps them as
    # 0-d tensors); load_state_dict turns a loaded tensor under these keys into a number.
    _host_keys = ("step",)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_hooked", False):
            cls.step = _with_step_hooks(step)

    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = ParamState()
        self.param_groups = []
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        if isinstance(params, flow.Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts"
            )
        param_groups = list(params)
        if not param_groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, got {type(param_group).__name__}")
        params = param_group["params"]
        params = [params] if isinstance(params, flow.Tensor) else list(params)
        if params and isinstance(params[0], tuple):  # named parameters: (name, tensor)
            if "param_names" in param_group:
                raise ValueError("param_group already has param_names and got named parameters")
            param_group["param_names"] = [name for name, _ in params]
            params = [p for _, p in params]
        param_group["params"] = params
        for param in param_group["params"]:
            if not isinstance(param, flow.Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, got {type(param).__name__}")
            if not param.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required {name}")
            param_group.setdefault(name, default)
        for key in param_group:
            if key in _KNOWN_KEYS and key not in self.defaults and key not in _COMMON_KEYS:
                raise ValueError(
                    f"[{type(self).__name__}] parameter group key '{key}' is not a "
                    f"{type(self).__name__} hyper-parameter (it reads "
                    f"{', '.join(sorted(set(self.defaults) | _COMMON_KEYS - {'params'}))})"
                )
        if (param_group.get("clip_grad_norm_type") is not None) and (
            param_group.get("clip_grad_max_norm") is None
        ):
            raise ValueError(
                f"[{type(self).__name__}] parameter group has clip_grad_norm_type but no "
                "clip_grad_max_norm"
            )
        seen = {id(p) for group in self.param_groups for p in group["params"]}
        if any(id(p) in seen for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        if len({id(p) for p in param_group["params"]}) != len(param_group["params"]):
            raise ValueError("a parameter group contains the same parameter twice")
        self.param_groups.append(param_group)

    # ---- steps as host scalars + tensor updates (graph mode traces the updates) -------------
    #
    # An optimizer that graph mode can compile splits its per-parameter step in two: _host()
    # computes the step's scalars in Python (learning rate, bias corrections, ...) and advances
    # Python-side counters; _update() applies them with tensor ops only. In a graph the scalars
    # are inputs fed at every call, so schedules and step counts stay live.

    def _host(self, group, param, state):
        raise NotImplementedError(f"[graph] {type(self).__name__} does not support graph mode yet")

    def _update(self, group, param, grad, state, scalars):
        raise NotImplementedError(f"[graph] {type(self).__name__} does not support graph mode yet")

    def _init_param_state(self, group, param):
        """The state tensors a parameter's update reads and writes (made before tracing)."""
        return {}

    def _state_of(self, group, param):
        if param not in self.state or not self.state[param]:
            self.state[param] = self._init_param_state(group, param)
        return self.state[param]

    @staticmethod
    def _lr(group):
        """The group's learning rate this step: its lr (as a scheduler set it) times lr_scale."""
        return _to_float(group["lr"]) * group.get("lr_scale", 1.0)

    @staticmethod
    def _clip(group, error_if_nonfinite=False):
        """Clips the group's gradients by its clip_grad_max_norm (tensor ops: this traces in a
        graph), when it has one."""
        if group.get("clip_grad_max_norm") is None:
            return
        norm_type = group.get("clip_grad_norm_type")
        flow.nn.utils.clip_grad_norm_(
            [p for p in group["params"] if p.grad is not None],
            group["clip_grad_max_norm"],
            2.0 if norm_type is None else norm_type,
            error_if_nonfinite,
        )

    def _group_grads(self, group, clip=True):
        """(param, grad) for the group's parameters with a gradient, in step order: clipped
        first (unless clip_grad() did it already), negated where the group maximizes."""
        if clip:
            self._clip(group)
        params = [p for p in group["params"] if p.grad is not None]
        return [(p, -p.grad if group.get("maximize") else p.grad) for p in params]

    def clip_grad(self, error_if_nonfinite=False):
        """OneFlow's explicit clipping: each group's gradients by its clip_grad_max_norm and
        clip_grad_norm_type. The next step() then does not clip again."""
        with flow.no_grad():
            for group in self.param_groups:
                self._clip(group, error_if_nonfinite)
        self._clipped = True

    def register_step_pre_hook(self, hook):
        """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), before step()."""
        return _register(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """hook(optimizer, args, kwargs), after step()."""
        return _register(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """hook(optimizer), before state_dict() packs the state."""
        return _register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """hook(optimizer, state_dict) -> None or a new state_dict."""
        return _register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """hook(optimizer, state_dict) -> None or the state_dict to load instead."""
        return _register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """hook(optimizer), after load_state_dict()."""
        return _register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    def zero_grad(self, set_to_none=True):
        zero_grads((p for group in self.param_groups for p in group["params"]), set_to_none)

    @_with_step_hooks
    @_use_grad
    def step(self, closure=None):
        """One update of every parameter with a gradient: _host's scalars, then _update."""
        loss = self._closure_loss(closure)
        clip, self._clipped = not getattr(self, "_clipped", False), False
        for group in self.param_groups:
            for param, grad in self._group_grads(group, clip):
                state = self._state_of(group, param)
                scalars = self._host(group, param, state)
                shards = self._on_shards(param, grad, state)
                if shards is not None:
                    self._update(group, *shards, scalars)
                else:
                    self._update(group, param, grad, state, scalars)
        return loss

    # An update that is elementwise and writes its state in place (Adam, AdamW, SGD) runs on a
    # global parameter's shards, where its gradient and states share its layout: the same
    # numbers, without a global op per term.
    _elementwise_update = False

    def _on_shards(self, param, grad, state):
        """(param, grad, state) as this rank's shards, or None where the update must run on the
        global tensors (not elementwise, local, traced, mixed or partial layouts)."""
        if not (self._elementwise_update and param.is_global and grad.is_global):
            return None
        if param.is_traced or grad.is_traced:
            return None
        layout = (param.placement, param.sbp)
        if any(s.kind == "partial" for s in param.sbp):
            return None
        tensors = [grad, *(v for v in state.values() if isinstance(v, flow.Tensor))]
        if any(not t.is_global or (t.placement, t.sbp) != layout for t in tensors):
            return None
        local = {k: v.to_local() if isinstance(v, flow.Tensor) else v for k, v in state.items()}
        return param.to_local(), grad.to_local(), local

    def _closure_loss(self, closure):
        if closure is None:
            return None
        with flow.enable_grad():
            return closure()

    # ---- state dict ---------------------------------------------------------------------

    def state_dict(self):
        """{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}. State keys
        starting with '_' are this implementation's bookkeeping and are not saved."""
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        index_of, groups, next_index = {}, [], 0
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for param in group["params"]:
                if id(param) not in index_of:
                    index_of[id(param)] = next_index
                    next_index += 1
            packed["params"] = [index_of[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {
            index_of[id(p)]: {k: v for k, v in s.items() if not k.startswith("_")}
            for p, s in self.state.items()
            if id(p) in index_of and s  # (torch keeps no entry for a stateless parameter)
        }
        result = {"state": state, "param_groups": groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            result = hook(self, result) or result
        return result

    def load_state_dict(self, state_dict):
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            state_dict = hook(self, state_dict) or state_dict
        groups, saved_groups = self.param_groups, state_dict["param_groups"]
        if len(groups) != len(saved_groups):
            raise ValueError(
                f"loaded state dict has {len(saved_groups)} parameter groups, "
                f"the optimizer has {len(groups)}"
            )
        for i, (group, saved) in enumerate(zip(groups, saved_groups)):
            if len(group["params"]) != len(saved["params"]):
                raise ValueError(
                    f"loaded state dict's parameter group {i} has {len(saved['params'])} "
                    f"parameters, the optimizer's group has {len(group['params'])}"
                )
        param_of = {}
        for group, saved in zip(groups, saved_groups):
            param_of.update((i, (group, p)) for i, p in zip(saved["params"], group["params"]))
        self.state = ParamState()
        for key, values in state_dict["state"].items():
            index = int(key)
            if index not in param_of:
                raise ValueError(f"loaded state dict has state for unknown parameter index {index}")
            group, param = param_of[index]
            dtype = self._state_dtype(group, param)
            self.state[param] = {
                k: (
                    self._host_number(v)
                    if k in self._host_keys
                    else self._cast_state(param, dtype, k, v)
                )
                for k, v in values.items()
            }
        for group, saved in zip(groups, saved_groups):
            for name, value in saved.items():
                if name != "params":
                    group[name] = copy.deepcopy(value)
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)

    @staticmethod
    def _host_number(value):
        """A host-side counter as a Python number (torch saves it as a 0-d tensor)."""
        if isinstance(value, flow.Tensor):
            value = value.item()
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return copy.deepcopy(value)

    def _state_dtype(self, group, param):
        """The dtype of a parameter's floating-point state: the parameter's own."""
        return param.dtype

    @staticmethod
    def _cast_state(param, dtype, name, value):
        if not isinstance(value, flow.Tensor):
            return copy.deepcopy(value)
        value = flow._global.like_global(value.detach(), param)
        if not value.is_global and not param.is_global and value.device != param.device:
            value = value.to(param.device)  # a loaded state (on the host) joins a GPU parameter
        value = value.clone()
        if name != "step" and value.dtype.is_floating_point and value.dtype != dtype:
            value = value.to(dtype)
        return value

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(k for k in group if k != "params"):
                lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)
