"""Lazy modules: parameters whose shapes come from the first input (torch.nn.modules.lazy).

A lazy module holds UninitializedParameter / UninitializedBuffer placeholders; its first call
(a forward pre-hook) or a load_state_dict materialises them, and after the first call the module
becomes its `cls_to_become` (LazyLinear -> Linear)."""

import itertools

import oneflowlike as flow

from ..parameter import Buffer, Parameter

__all__ = ["LazyModuleMixin", "UninitializedBuffer", "UninitializedParameter"]


def _placeholder(device, dtype):
    t = flow.empty(0, dtype=dtype)
    return t if device is None else t.to(device)


class _UninitializedMixin:
    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None):
        """Gives the placeholder real (uninitialised) storage of `shape`, keeping its device and
        dtype unless told otherwise, and makes it the ordinary class."""
        device = self.device if device is None else device
        dtype = self.dtype if dtype is None else dtype
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.data = flow.empty(*shape, dtype=dtype).to(device)
        self.__class__ = self.cls_to_become

    def __repr__(self):
        return f"<{type(self).__name__}>"


class UninitializedParameter(_UninitializedMixin, Parameter):
    """A parameter whose shape is not known yet; `materialize(shape)` turns it into a
    Parameter."""

    cls_to_become = Parameter

    def __init__(self, requires_grad=True, device=None, dtype=None):
        super().__init__(_placeholder(device, dtype), requires_grad)


class UninitializedBuffer(_UninitializedMixin, Buffer):
    """A buffer whose shape is not known yet; `materialize(shape)` turns it into a Buffer."""

    cls_to_become = Buffer

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        super().__init__(_placeholder(device, dtype), persistent=persistent)
        if requires_grad:
            self.requires_grad_(True)


def is_lazy(value):
    return isinstance(value, _UninitializedMixin)


class LazyModuleMixin:
    """Mixed in before the module class: `initialize_parameters(*inputs)` materialises the
    placeholders, run by a forward pre-hook on the first call."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters)

    def _load_from_state_dict(self, state_dict, prefix, *args):
        # The checkpoint gives the shapes: materialise before the ordinary copy.
        for name, value in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and is_lazy(value) and not is_lazy(state_dict[key]):
                with flow.no_grad():
                    value.materialize(tuple(state_dict[key].shape))
        super()._load_from_state_dict(state_dict, prefix, *args)

    def _apply(self, fn):
        # A dtype or device conversion returns a plain tensor: placeholders stay placeholders.
        lazy = {k: v for k, v in self._buffers.items() if is_lazy(v)}
        super()._apply(fn)
        for name, old in lazy.items():
            new = self._buffers[name]
            if not is_lazy(new):
                self._buffers[name] = UninitializedBuffer(
                    new.requires_grad, new.device, new.dtype, old.persistent
                )
        return self

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {self.__class__.__name__}"
        )

    def has_uninitialized_params(self):
        values = itertools.chain(self._parameters.values(), self._buffers.values())
        return any(is_lazy(v) for v in values)

    def _infer_parameters(self, module, args):
        module.initialize_parameters(*args)
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        del module._initialize_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError(
            "Modules with uninitialized parameters can't be used with `DataParallel`. Run a "
            "dummy forward pass to correctly initialize the modules"
        )
