"""torch.Tensor's in-place variants of ops without an in-place row (python/oneflowlike/_inplace.py):
the values and gradients of PyTorch's own in-place methods, and its refusals."""

import numpy as np
import pytest

import oneflowlike as flow
from oneflowlike import _inplace

torch = pytest.importorskip("torch")

UNARY = ["cos", "erf", "exp", "expm1", "log1p", "sigmoid", "sin", "sqrt", "tanh"]
BINARY = ["hypot", "eq", "lt"]


@pytest.mark.parametrize("name", UNARY + BINARY)
def test_inplace_variant_matches_pytorch_values_and_gradients(name):
    rng = np.random.default_rng(0)
    x = rng.uniform(0.1, 0.9, (3, 4))
    other = [rng.uniform(0.2, 1.5, (3, 4))] if name in BINARY else []
    leaf, tleaf = flow.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours = getattr(leaf * 1.0, f"{name}_")(*[flow.tensor(o) for o in other])
    theirs = getattr(tleaf * 1.0, f"{name}_")(*[torch.tensor(o) for o in other])
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
    if theirs.requires_grad:
        ours.sum().backward()
        theirs.sum().backward()
        np.testing.assert_allclose(leaf.grad.numpy(), tleaf.grad.numpy(), rtol=1e-12)


def test_inplace_variant_writes_self_and_returns_it():
    t = flow.tensor([1.0, 2.0])
    assert t.hypot_(flow.tensor([0.0, 0.0])) is t and t.tolist() == [1.0, 2.0]
    assert t.eq_(flow.tensor([1.0, 0.0])) is t and t.tolist() == [1.0, 0.0]


def test_inplace_variant_refusals_name_the_method():
    with pytest.raises(RuntimeError, match=r"\[sqrt_\] result type .*float32 can't be cast"):
        flow.tensor([4, 9]).sqrt_()
    with pytest.raises(RuntimeError, match=r"\[copy_\] a leaf tensor .* requires grad"):
        flow.tensor([1.0], requires_grad=True).exp_()
    with pytest.raises(RuntimeError, match=r"\[hypot_\] the result has shape \(2, 3\)"):
        flow.zeros(3).hypot_(flow.ones(2, 3))


def test_every_listed_name_with_an_op_has_its_inplace_method():
    missing = [n for n in _inplace._NAMES if hasattr(flow.Tensor, n)]
    assert [n for n in missing if not hasattr(flow.Tensor, f"{n}_")] == []
