"""PyTorch's call forms and corner cases that the OpInfo samples exercise, against torch:
keyword and tensor arguments (alpha, dtype, decimals, rounding_mode, tensor starts, repeats and
sections, lists of dims), bools not taken as dims, empty expanded tensors written in place,
broadcasting rules and gradients that flow to tensor bounds."""

import numpy as np
import pytest
import torch

import oneflowlike as flow

torch.set_num_threads(1)
pytestmark = pytest.mark.unit
R = np.random.default_rng(0)


def both(a):
    return flow.tensor(a), torch.tensor(a)


def close(ours, theirs, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol)


def test_keyword_and_tensor_arguments():
    x, tx = both(R.standard_normal((4, 5)))
    s, ts = both(R.standard_normal((4, 3)))
    idx = [0, 2, 4]
    close(
        flow.index_add(x, 1, flow.tensor(idx), s, alpha=2.5),
        torch.index_add(tx, 1, torch.tensor(idx), ts, alpha=2.5),
    )
    close(
        flow.softmax(x, 1, dtype=flow.float32),
        torch.softmax(tx, 1, dtype=torch.float32),
        rtol=1e-6,
    )
    close(flow.log_softmax(x, 0, dtype=flow.float64), torch.log_softmax(tx, 0, dtype=torch.float64))
    close(flow.prod(x, 1, dtype=flow.float32), torch.prod(tx, 1, dtype=torch.float32), atol=1e-6)
    for d in (0, 2, -1):
        close(flow.round(x * 37, decimals=d), torch.round(tx * 37, decimals=d))
    close(flow.narrow(x, 1, flow.tensor(1), 3), torch.narrow(tx, 1, torch.tensor(1), 3))
    y, ty = both(R.standard_normal((2, 3, 4)))
    close(flow.movedim(y, [0, 2], [2, 0]), torch.movedim(ty, [0, 2], [2, 0]))
    close(flow.movedim(y, 0, -1), torch.movedim(ty, 0, -1))
    r = [1, 0, 3, 2]
    close(
        flow.repeat_interleave(x, flow.tensor(r), dim=0),
        torch.repeat_interleave(tx, torch.tensor(r), dim=0),
    )
    assert flow.repeat_interleave(flow.tensor([2, 1])).tolist() == [0, 0, 1]
    for sections in (torch.tensor(2), torch.tensor([1, 3])):
        ours = flow.tensor_split(x, flow.tensor(sections.numpy()), 1)
        theirs = torch.tensor_split(tx, sections, 1)
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            close(o, t)
    z = x.clone()
    z.div_(flow.tensor(0.7), rounding_mode="floor")
    close(z, tx.div(0.7, rounding_mode="floor"))
    with pytest.raises(TypeError, match="narrow"):
        flow.narrow(x, 1, flow.tensor(1.5), 2)


def test_bools_are_not_dims():
    x, tx = both(R.standard_normal((3, 4)))
    for name in ("std", "var"):
        close(getattr(flow, name)(x, True), getattr(torch, name)(tx, True))
        close(getattr(flow, name)(x, False), getattr(torch, name)(tx, False))
    for name in ("std_mean", "var_mean"):
        for o, t in zip(getattr(flow, name)(x, False), getattr(torch, name)(tx, False)):
            close(o, t)
    close(flow.std(x, 1), torch.std(tx, 1))  # an int is still a dim


def test_in_place_on_an_empty_expanded_tensor():
    x = flow.zeros(1, 1, 3).expand(1, 0, 3)
    assert tuple(x.exp_().shape) == (1, 0, 3)


def test_view_changing_in_place_forms():
    x = flow.zeros(2, 1, 3)
    assert x.squeeze_(1) is x and tuple(x.shape) == (2, 3)
    assert tuple(x.unsqueeze_(0).shape) == (1, 2, 3)
    assert tuple(x.transpose_(0, 2).shape) == (3, 2, 1)
    w = flow.zeros(2, 2, requires_grad=True) * 1
    with pytest.raises(RuntimeError, match="t_"):
        w.t_()


def test_broadcasting_corners():
    x, tx = both(R.standard_normal(5))
    m = R.standard_normal((5, 5)) > 0
    close(flow.masked_fill(x, flow.tensor(m), 1.5), torch.masked_fill(tx, torch.tensor(m), 1.5))
    a, ta = both(R.standard_normal((5, 5)))
    i = np.array([[0, 1]])
    close(flow.take_along_dim(a, flow.tensor(i), 1), torch.take_along_dim(ta, torch.tensor(i), 1))
    e, te = both(np.zeros(0))
    close(flow.cat([e, a], dim=1), torch.cat([te, ta], dim=1))
    close(flow.diff(a, 0, 0, prepend=a[:1]), torch.diff(ta, 0, 0, prepend=ta[:1]))
    close(flow.index_select(flow.tensor(2.0), 0, flow.tensor([0])), torch.tensor(2.0)[None][0])
    assert flow.index_select(flow.tensor(2.0), 0, flow.tensor([0])).dim() == 0
    assert flow.equal(a, a) is True and flow.equal(a, a + 1) is False
    assert a.equal(a) is True
    assert flow.atleast_2d([x, a])[0].shape == (1, 5)
    w, tw = both(R.standard_normal(5))
    close(flow.nn.functional.linear(a, w), torch.nn.functional.linear(ta, tw))


def test_cov_weights_and_corrcoef_of_one_variable():
    x, tx = both(R.standard_normal((3, 6)))
    fw = np.array([1, 2, 0, 3, 1, 1])
    aw = R.uniform(0.1, 1.0, 6)
    for c in (0, 1, 2):
        close(
            flow.cov(x, correction=c, fweights=flow.tensor(fw), aweights=flow.tensor(aw)),
            torch.cov(tx, correction=c, fweights=torch.tensor(fw), aweights=torch.tensor(aw)),
        )
    close(flow.cov(x, aweights=flow.tensor(aw)), torch.cov(tx, aweights=torch.tensor(aw)))
    one, tone = both(R.standard_normal((1, 4)))
    assert flow.corrcoef(one).dim() == 0 and flow.cov(one).dim() == 0
    with pytest.raises(TypeError, match="fweights"):
        flow.cov(x, fweights=flow.tensor(aw))


def _grads(fn, tfn, *arrays):
    ours = [flow.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    fn(*ours).sum().backward()
    tfn(*theirs).sum().backward()
    for o, t in zip(ours, theirs):
        close(o.grad, t.grad)


def test_gradients_to_tensor_bounds_values_and_divisors():
    x = R.standard_normal((4, 3))
    lo, hi = R.standard_normal((4, 3)) - 0.5, R.standard_normal(3) + 0.5
    _grads(flow.clamp, torch.clamp, x, lo, hi)
    _grads(flow.clamp_min, torch.clamp_min, x, lo)
    _grads(flow.clamp_max, torch.clamp_max, x, np.array(0.1))
    _grads(flow.remainder, torch.remainder, x * 5, hi + 1)
    _grads(lambda a, v: flow.fill(a, v), lambda a, v: torch.fill(a, v), x, np.array(2.0))
    close(flow.clamp(flow.tensor(x), flow.tensor(lo), flow.tensor(hi)),
          torch.clamp(torch.tensor(x), torch.tensor(lo), torch.tensor(hi)))  # fmt: skip


def test_relu_keeps_nan_and_passes_its_gradient():
    _grads(flow.relu, torch.relu, np.array([np.nan, -1.0, 0.0, 2.0]))
    got = flow.relu(flow.tensor([np.nan, -1.0], dtype=flow.float32)).numpy()
    assert np.isnan(got[0]) and got[1] == 0


def test_polynomial_degrees_truncate_toward_zero():
    x = R.standard_normal(5)
    n = np.array([-0.5, -1.0, 0.9, 2.7, -3.2])
    close(
        flow.special.chebyshev_polynomial_t(flow.tensor(x), flow.tensor(n)),
        torch.special.chebyshev_polynomial_t(torch.tensor(x), torch.tensor(n)),
    )


@pytest.mark.parametrize("a,b", [(1.0, 2.0), (1, 2.5), (1, 2), (True, False), (1.5, True)])
def test_python_numbers_alone_promote_to_their_categorys_default_dtype(a, b):
    # torch.where(cond, 1.0, 2.0) is float32, not the float64 a Python float is held in
    cond = [True, False]
    ours = flow.where(flow.tensor(cond), a, b)
    theirs = torch.where(torch.tensor(cond), a, b)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
