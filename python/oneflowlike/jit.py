"""flow.jit: the TorchScript hooks that model files guard with or decorate, as what they are
outside TorchScript. Nothing is scripted here (nn.Graph is the compiled mode): is_scripting()
and is_tracing() are False, and ignore / unused / export return what they decorate."""

import typing

Final = typing.Final


def is_scripting():
    return False


def is_tracing():
    return False


def ignore(fn=None, *, drop=False):
    """@ignore, @ignore(drop=True): the function itself."""
    return fn if fn is not None else (lambda f: f)


def unused(fn):
    return fn


def export(fn):
    return fn
