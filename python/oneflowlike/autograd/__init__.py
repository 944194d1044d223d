"""flow.autograd: backward and grad over the recorded graph."""

from .. import _C
from .grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled  # noqa: F401


def _as_list(x):
    if x is None:
        return None
    return list(x) if isinstance(x, (list, tuple)) else [x]


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False):
    tensors = _as_list(tensors)
    grads = _as_list(grad_tensors) or [None] * len(tensors)
    retain = create_graph if retain_graph is None else retain_graph
    _C.autograd_backward(tensors, grads, retain, create_graph)


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph=False,
    allow_unused=False,
):
    """Returns d(outputs)/d(inputs) as a tuple, without touching .grad."""
    outputs, inputs = _as_list(outputs), _as_list(inputs)
    grads = _as_list(grad_outputs) or [None] * len(outputs)
    retain = create_graph if retain_graph is None else retain_graph
    return _C.autograd_grad(outputs, inputs, grads, retain, create_graph, allow_unused)


def queue_callback(fn):
    """Runs fn() once the backward() now running has finished, every gradient in .grad (from a
    hook; as PyTorch's Variable._execution_engine.queue_callback). Not run when backward fails."""
    _C.queue_callback(fn)
