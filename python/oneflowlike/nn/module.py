"""nn.Module: the base class of layers; registers parameters, buffers and submodules."""

import itertools
from collections import OrderedDict

import oneflowlike as flow
from oneflowlike import _global

from ._state_dict import StateDictMixin
from .parameter import Buffer, Parameter
from .utils import zero_grads

# Bumped whenever any module's children change or a module's `training` is set: nn.Graph's call
# keeps what it walked of its modules and their modes while it stays the same.
_tree_version = [0]


def tree_version():
    return _tree_version[0]


def _changed():
    _tree_version[0] += 1


class _Children(OrderedDict):
    """A module's `_modules`: an OrderedDict whose every change bumps the tree's version."""

    def __setitem__(self, key, value):
        _changed()
        super().__setitem__(key, value)

    def __delitem__(self, key):
        _changed()
        super().__delitem__(key)

    def pop(self, *args):
        _changed()
        return super().pop(*args)

    def popitem(self, last=True):
        _changed()
        return super().popitem(last)

    def clear(self):
        _changed()
        super().clear()

    def update(self, *args, **kwargs):
        _changed()
        super().update(*args, **kwargs)

    def setdefault(self, key, default=None):
        _changed()
        return super().setdefault(key, default)

    def move_to_end(self, key, last=True):
        _changed()
        super().move_to_end(key, last)


class RemovableHandle:
    """Returned by register_*_hook; ``remove()`` unregisters the hook."""

    _next_id = itertools.count()

    def __init__(self, hooks):
        self._hooks = hooks
        self.id = next(RemovableHandle._next_id)

    def remove(self):
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _addindent(text, num_spaces):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * num_spaces + line for line in lines[1:])


def _check_name(module, name, kind):
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain ".", got: {name}')
    if hasattr(module, name) and name not in getattr(module, f"_{kind}s", {}):
        raise KeyError(f"attribute '{name}' already exists")


def _same_tensor(a, b):
    """True when a conversion returned (a view of) the same data, so nothing needs replacing."""
    if a is b:
        return True
    if not hasattr(a, "data_ptr"):
        return False
    return (
        a.dtype == b.dtype
        and str(a.device) == str(b.device)
        and tuple(a.shape) == tuple(b.shape)
        and a.data_ptr() == b.data_ptr()
    )


def _has_data_setter():
    prop = getattr(flow.Tensor, "data", None)
    return isinstance(prop, property) and prop.fset is not None


class Module(StateDictMixin):
    """Base class for all neural network modules (mirrors torch.nn.Module)."""

    _version = 1

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() takes no arguments")
        for name, value in (
            ("training", True),
            ("_parameters", OrderedDict()),
            ("_buffers", OrderedDict()),
            ("_non_persistent_buffers_set", set()),
            ("_modules", _Children()),
            ("_forward_pre_hooks", OrderedDict()),
            ("_forward_hooks", OrderedDict()),
        ):
            object.__setattr__(self, name, value)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing "forward"')

    def __call__(self, *args, **kwargs):
        for hook in list(self._forward_pre_hooks.values()):
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        if self.__dict__.get("_activation_checkpointing") and not kwargs:
            output = flow.utils.checkpoint.checkpoint(
                self.forward, *args, params=[p for p in self.parameters() if p.requires_grad]
            )
        else:
            output = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            result = hook(self, args, output)
            if result is not None:
                output = result
        return output

    def register_forward_pre_hook(self, hook):
        handle = RemovableHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle.id] = hook
        return handle

    def register_forward_hook(self, hook):
        handle = RemovableHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = hook
        return handle

    # ---- registration -------------------------------------------------------------------

    def register_parameter(self, name, param):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name(self, name, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                "(nn.Parameter or None required)"
            )
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name(self, name, "buffer")
        if tensor is not None and not isinstance(tensor, flow.Tensor):
            raise TypeError(
                f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                "(Tensor or None required)"
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        _check_name(self, name, "module")
        self._modules[name] = module

    register_module = add_module

    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def _forget(self, name, *stores):
        for store in stores:
            if name in store:
                if isinstance(store, set):
                    store.discard(name)
                else:
                    del store[name]

    def __setattr__(self, name, value):
        d = self.__dict__
        params, buffers, modules = d.get("_parameters"), d.get("_buffers"), d.get("_modules")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, d, buffers, modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                    "(nn.Parameter or None expected)"
                )
            params[name] = None
        elif isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, d, params, buffers, self._non_persistent_buffers_set)
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as child module '{name}' "
                    "(nn.Module or None expected)"
                )
            modules[name] = None
        elif isinstance(value, Buffer):
            if buffers is None:
                raise AttributeError("cannot assign buffers before Module.__init__() call")
            self._forget(name, d, params, modules)
            self.register_buffer(name, value, persistent=value.persistent)
        elif buffers is not None and name in buffers:
            if value is not None and not isinstance(value, flow.Tensor):
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                    "(Tensor or None expected)"
                )
            buffers[name] = value
        else:
            if name == "training":
                _changed()
            object.__setattr__(self, name, value)

    def __delattr__(self, name):
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = list(super().__dir__())
        keys += list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted(set(k for k in keys if not k[0].isdigit()))

    # ---- iteration ----------------------------------------------------------------------

    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
        if not recurse:
            modules = [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in get_members(module):
                if value is None or (remove_duplicate and id(value) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(value))
                yield (module_prefix + "." + name if module_prefix else name), value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(
            lambda m: m._parameters.items(), prefix, recurse, remove_duplicate
        )

    def parameters(self, recurse=True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub_prefix = prefix + "." + name if prefix else name
            yield from module.named_modules(memo, sub_prefix, remove_duplicate)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def get_submodule(self, target):
        module = self
        for item in target.split(".") if target else []:
            if item not in module._modules or module._modules[item] is None:
                raise AttributeError(f"{module._get_name()} has no submodule `{item}`")
            module = module._modules[item]
        return module

    # ---- modes and gradients ------------------------------------------------------------

    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        zero_grads(self.parameters(), set_to_none)

    def apply(self, fn):
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ---- dtype / device conversion ------------------------------------------------------

    def _apply(self, fn):
        """Applies fn to every parameter and buffer; fn returns the tensor or a converted copy."""
        for module in self.children():
            module._apply(fn)
        for key, param in self._parameters.items():
            if param is None:
                continue
            with flow.no_grad():
                new_data = fn(param)
            if _same_tensor(new_data, param):
                continue
            grad = param.grad
            if _has_data_setter():
                param.data = new_data
                new_param = param
            else:
                new_param = Parameter(new_data, param.requires_grad)
                self._parameters[key] = new_param
            if grad is not None:
                with flow.no_grad():
                    new_param.grad = fn(grad)
        for key, buf in self._buffers.items():
            if buf is not None:
                new_buf = fn(buf)
                if not _same_tensor(new_buf, buf):
                    self._buffers[key] = new_buf
        return self

    def to_global(self, placement, sbp):
        """Makes every parameter and buffer global on ``placement``, in place.

        ``sbp`` is one layout for all (an Sbp, or a tuple with one per mesh axis) or a function
        ``(name, tensor) -> layout``. With one layout for all, a tensor without the axis a split
        names (a 0-d buffer such as BatchNorm's batch counter) stays replicated on that mesh
        axis. The placement's first rank's values are the model's (sent to the others, as
        OneFlow's to_global does), so ranks that built it from different seeds agree after;
        each rank keeps its shard. Parameters shared by several modules (tied weights) stay one
        parameter. Build the optimizer afterwards: its states then take each parameter's layout.
        """

        def fits(s, t):
            return s.kind != "split" or s.axis < t.dim()

        def convert(name, t):
            if callable(sbp):
                layout = sbp(name, t)
            elif isinstance(sbp, (tuple, list)):
                layout = [s if fits(s, t) else flow.sbp.broadcast for s in sbp]
            else:
                layout = sbp if fits(sbp, t) else flow.sbp.broadcast
            if t.is_global:
                return t.to_global(placement, layout)
            return _global.from_full(t, placement, layout, sync_data=True)

        done = {}  # id of a tensor -> its global replacement, so that shared ones stay shared
        for prefix, module in self.named_modules():
            dot = prefix + "." if prefix else ""
            for key, param in module._parameters.items():
                if param is None:
                    continue
                if id(param) not in done:
                    with flow.no_grad():
                        data = convert(dot + key, param.detach())
                    done[id(param)] = (param, Parameter(data, param.requires_grad))
                module._parameters[key] = done[id(param)][1]
            for key, buf in module._buffers.items():
                if buf is not None:
                    if id(buf) not in done:
                        done[id(buf)] = (buf, convert(dot + key, buf))
                    module._buffers[key] = done[id(buf)][1]
        return self

    def to(self, *args, **kwargs):
        """``to(dtype)``, ``to(device)``, ``to(tensor)``, ``to(device, dtype)``; floats only.
        ``to(flow.nn.graph.GraphModule)``: the module's settings in graphs."""
        graph_module = flow.nn.graph.GraphModule  # (the graph package builds on this module)
        if len(args) == 1 and args[0] is graph_module and not kwargs:
            return graph_module(self)
        dtype, device = kwargs.pop("dtype", None), kwargs.pop("device", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        dtype_type = type(flow.float32)
        for arg in args:
            if isinstance(arg, dtype_type):
                dtype = arg
            elif isinstance(arg, flow.Tensor):
                dtype, device = arg.dtype, arg.device
            else:
                device = arg
        if dtype is not None and not (dtype.is_floating_point):
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, got {dtype}")

        def convert(t):
            if device is not None:
                t = t.to(device)
            if dtype is not None and t.dtype.is_floating_point and t.dtype != dtype:
                t = t.to(dtype)
            return t

        return self._apply(convert)

    def float(self):
        return self.to(flow.float32)

    def double(self):
        return self.to(flow.float64)

    def half(self):
        return self.to(flow.float16)

    def bfloat16(self):
        return self.to(flow.bfloat16)

    def to_empty(self, *, device):
        """Moves every parameter and buffer to ``device`` as uninitialised storage of the same
        shape and dtype: how a module built on the meta device gets real memory (then
        ``reset_parameters()`` or ``load_state_dict`` fills it)."""

        def convert(t):
            return flow.empty(*tuple(t.shape), dtype=t.dtype, device=device)

        return self._apply(convert)

    def cuda(self, device=None):
        return self.to("cuda" if device is None else f"cuda:{device}")

    def cpu(self):
        return self.to("cpu")

    # ---- printing -----------------------------------------------------------------------

    def _get_name(self):
        return type(self).__name__

    def extra_repr(self):
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [
            f"({key}): {_addindent(repr(module), 2)}" for key, module in self._modules.items()
        ]
        lines = extra_lines + child_lines
        body = ""
        if len(extra_lines) == 1 and not child_lines:
            body = extra_lines[0]
        elif lines:
            body = "\n  " + "\n  ".join(lines) + "\n"
        return f"{self._get_name()}({body})"
