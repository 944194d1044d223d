"""multinomial: shapes, reproducibility through generators, the sampled frequencies, rows that
are no distribution, and the meta device."""

import numpy as np
import pytest

import oneflowlike as flow
from _check import assert_close

P = np.array([[0.1, 0.0, 0.6, 0.3], [1.0, 2.0, 3.0, 4.0]])  # rows need not sum to 1


def test_shapes_dtype_and_1d_input():
    out = flow.multinomial(flow.tensor(P), 3)
    assert out.dtype == flow.int64 and tuple(out.shape) == (2, 3)
    one = flow.tensor(P[1]).multinomial(6, replacement=True)
    assert tuple(one.shape) == (6,) and one.numpy().min() >= 0 and one.numpy().max() < 4


def test_the_same_generator_state_gives_the_same_samples():
    p = flow.tensor(P, dtype=flow.float32)
    a = flow.multinomial(p, 2, generator=flow.Generator(5))
    b = flow.multinomial(p, 2, generator=flow.Generator(5))
    assert_close(a, b.numpy())
    g = flow.Generator(5)
    first, second = flow.multinomial(p, 8, True, generator=g), flow.multinomial(
        p, 8, True, generator=g
    )
    assert not np.array_equal(first.numpy(), second.numpy())  # the generator moved on
    flow.manual_seed(3)
    c = flow.multinomial(p, 8, True)
    flow.manual_seed(3)
    assert_close(flow.multinomial(p, 8, True), c.numpy())


def test_with_replacement_frequencies_follow_the_probabilities():
    n = 40000
    out = flow.multinomial(flow.tensor(P), n, replacement=True, generator=flow.Generator(1))
    for row, p in zip(out.numpy(), P):
        freq = np.bincount(row, minlength=4) / n
        assert_close(freq, p / p.sum(), rtol=0, atol=0.01)
    assert (out.numpy()[0] != 1).all()  # a zero-probability category is never drawn


def test_without_replacement_draws_distinct_categories_in_probability_order():
    p = flow.tensor(np.tile(P[1], (3000, 1)))
    out = flow.multinomial(p, 4, generator=flow.Generator(2)).numpy()
    assert (np.sort(out, axis=1) == np.arange(4)).all()  # every category exactly once
    first = np.bincount(out[:, 0], minlength=4) / len(out)
    assert_close(first, P[1] / P[1].sum(), rtol=0, atol=0.03)
    sparse = flow.multinomial(flow.tensor(P[0]), 3, generator=flow.Generator(3)).numpy()
    assert sorted(sparse) == [0, 2, 3]  # the zero-probability category is never drawn


@pytest.mark.parametrize("dtype", [flow.float16, flow.bfloat16, flow.float64])
def test_other_float_dtypes(dtype):
    out = flow.multinomial(flow.tensor(P).to(dtype), 2, generator=flow.Generator(4))
    assert out.dtype == flow.int64 and (out.numpy()[0] != 1).all()


def test_errors():
    p = flow.tensor(P)
    with pytest.raises(RuntimeError, match=r"\[multinomial\] cannot draw 5 samples without repl"):
        flow.multinomial(p, 5)
    with pytest.raises(RuntimeError, match=r"\[multinomial\] num_samples must be positive"):
        flow.multinomial(p, 0)
    with pytest.raises(RuntimeError, match=r"\[multinomial\] probabilities must be 1-d or 2-d"):
        flow.multinomial(flow.ones(2, 2, 2), 1)
    with pytest.raises(TypeError, match=r"\[multinomial\] probabilities must be floating"):
        flow.multinomial(flow.ones(4, dtype=flow.int64), 1)
    with pytest.raises(RuntimeError, match=r"\[multinomial\] row 1 .*inf, nan or an element < 0"):
        flow.multinomial(flow.tensor([[1.0, 2.0], [1.0, -1.0]]), 1)
    with pytest.raises(RuntimeError, match=r"\[multinomial\] row 0 .*sums to 0"):
        flow.multinomial(flow.zeros(1, 3), 1)
    with pytest.raises(RuntimeError, match=r"\[multinomial\] row 0 has 3 categories of nonzero"):
        flow.multinomial(flow.tensor(P[0]), 4)
    with pytest.raises(RuntimeError, match=r"\[multinomial\] .* have no category"):
        flow.multinomial(flow.ones(2, 0), 1)


def test_a_failed_call_draws_nothing_and_samples_need_no_gradient():
    g = flow.Generator(6)
    with pytest.raises(RuntimeError):
        flow.multinomial(flow.tensor(P), 9, generator=g)
    assert g.get_state()[1] == 0
    p = flow.tensor(P, requires_grad=True)
    assert not flow.multinomial(p, 1).requires_grad


def test_on_meta_gives_the_shape_and_the_same_errors():
    out = flow.multinomial(flow.ones(5, 7, device="meta"), 3)
    assert out.device.type == "meta" and tuple(out.shape) == (5, 3) and out.dtype == flow.int64

    def message(device):
        with pytest.raises(RuntimeError) as e:
            flow.multinomial(flow.ones(2, 3, device=device), 4)
        return str(e.value)

    assert message("meta") == message("cpu")
