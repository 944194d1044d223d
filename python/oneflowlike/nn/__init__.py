"""oneflowlike.nn: modules, parameters, functional ops and initialisers (torch.nn-style)."""

from . import functional, init, parallel, utils
from .graph import Graph
from .module import Module
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from .parameter import Buffer, Parameter

__all__ = ["Buffer", "Module", "Parameter", "functional", "init", "parallel", "utils"] + list(
    _modules_all
)
