"""Grad mode, as torch.autograd.grad_mode: no_grad, enable_grad, set_grad_enabled and
inference_mode, each a context manager and a decorator."""

import builtins
import functools

from .. import _C

_py_bool = builtins.bool


class _GradMode:
    """A context manager and decorator that sets grad mode, like torch.no_grad."""

    def __init__(self, enabled):
        self._enabled = enabled
        self._prev = []

    def __enter__(self):
        self._prev.append(_C.is_grad_enabled())
        _C.set_grad_enabled(self._enabled)

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._prev.pop())
        return False

    def __call__(self, fn):
        enabled = self._enabled

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with _GradMode(enabled):
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_GradMode):
    def __init__(self):
        super().__init__(False)


class enable_grad(_GradMode):
    def __init__(self):
        super().__init__(True)


class set_grad_enabled(_GradMode):
    """Sets grad mode immediately (as a call) and restores it when used as a context."""

    def __init__(self, mode):
        super().__init__(_py_bool(mode))
        self._prev.append(_C.is_grad_enabled())
        _C.set_grad_enabled(self._enabled)

    def __enter__(self):
        pass


class inference_mode(_GradMode):
    """PyTorch's inference_mode: no autograd recording inside (here the same as no_grad: this
    framework keeps no version counters to skip). A context manager and a decorator, with or
    without the call: `@flow.inference_mode` and `@flow.inference_mode()`; `mode=False` records
    as usual."""

    def __new__(cls, mode=True):
        if callable(mode) and not isinstance(mode, _py_bool):  # the bare decorator
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        super().__init__(not _py_bool(mode))
