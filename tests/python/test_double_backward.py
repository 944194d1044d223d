"""Double backward through the ops whose gradients are fused ops (activations, softmax and
log_softmax, the norms, nll_loss): the first gradient, taken with create_graph=True, is
differentiated again and compared with central finite differences of that gradient."""

import numpy as np
import pytest

import oneflowlike as flow
import oneflowlike.nn.functional as F
from _check import check_grad, rng


def first_gradient(f, wrt=0, weight_seed=7):
    """xs -> d sum(f(*xs) * w) / d xs[wrt], as a differentiable function of every input."""

    def g(*xs):
        with flow.enable_grad():
            leaves = [x if x.requires_grad else x.detach().requires_grad_(True) for x in xs]
            y = f(*leaves)
            w = rng(weight_seed).uniform(0.5, 1.5, size=tuple(y.shape))
            (gx,) = flow.autograd.grad(
                (y * flow.tensor(w, dtype=y.dtype)).sum(), leaves[wrt], create_graph=True
            )
        return gx

    return g


ACTIVATIONS = {
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "sigmoid": flow.sigmoid,
    "tanh": flow.tanh,
}


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activations(name):
    check_grad(first_gradient(ACTIVATIONS[name]), [rng(1).normal(size=(3, 4))], rtol=1e-5)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_and_log_softmax(log):
    f = (lambda x: F.log_softmax(x, dim=1)) if log else (lambda x: F.softmax(x, dim=1))
    check_grad(first_gradient(f), [rng(2).normal(size=(3, 5))], rtol=1e-5)


def test_cross_entropy_gradient_penalty():
    # A loss plus the squared norm of its own gradient: the penalty's term flows through
    # log_softmax's and nll_loss's backward ops.
    target = flow.tensor([1, 0, 4], dtype=flow.int64)

    def penalised(x):
        with flow.enable_grad():
            x = x if x.requires_grad else x.detach().requires_grad_(True)
            loss = F.cross_entropy(x * x, target)
            (gx,) = flow.autograd.grad(loss, x, create_graph=True)
        return loss + (gx * gx).sum()

    check_grad(penalised, [rng(3).normal(size=(3, 5))], rtol=1e-5)


def gradient_penalty(f, weight_seed=7):
    """xs -> sum of the squares of d sum(f(*xs) * w) / d x for every x: differentiating it again
    needs every second derivative of f."""

    def g(*xs):
        with flow.enable_grad():
            leaves = [x if x.requires_grad else x.detach().requires_grad_(True) for x in xs]
            y = f(*leaves)
            w = flow.tensor(rng(weight_seed).uniform(0.5, 1.5, size=tuple(y.shape)), dtype=y.dtype)
            grads = flow.autograd.grad((y * w).sum(), leaves, create_graph=True)
        return sum((gx * gx).sum() for gx in grads)

    return g


@pytest.mark.parametrize("rms", [False, True])
def test_layer_norm_and_rms_norm(rms):
    # The bias's gradient is the weighted sum of the output's, which no input changes: it is
    # left out here (its first derivative is checked with the other gradients of the norms).
    def f(x, w):
        return F.rms_norm(x, (4,), w, eps=1e-5) if rms else F.layer_norm(x, (4,), w, eps=1e-5)

    r = rng(4)
    check_grad(gradient_penalty(f), [r.normal(size=(3, 4)), r.uniform(0.5, 1.5, size=4)])


def test_without_create_graph_the_fused_gradients_run():
    x = flow.tensor(rng(5).normal(size=(2, 4)), requires_grad=True)
    F.layer_norm(x, (4,)).sum().backward()
    assert not x.grad.requires_grad
