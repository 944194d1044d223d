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


# --- sample_tokens: generation's sampler ---------------------------------------------------

LOGITS = np.array([[2.0, 0.5, 1.0, -1.0, 0.0], [0.0, 3.0, 3.0, 1.0, -np.inf]], np.float32)


def sample(logits, seeds, steps, temperature, top_k, top_p):
    rows = len(logits)
    per_row = lambda v, dtype: flow.tensor(np.broadcast_to(v, (rows,)).copy(), dtype=dtype)  # noqa
    return flow.sample_tokens(
        flow.tensor(logits), per_row(seeds, flow.int64), per_row(steps, flow.int64),
        per_row(temperature, flow.float32), per_row(top_k, flow.int64),
        per_row(top_p, flow.float32),
    ).numpy()  # fmt: skip


def test_temperature_zero_is_the_first_largest_logit():
    np.testing.assert_array_equal(sample(LOGITS, 0, 0, 0.0, 0, 1.0), [0, 1])


def draws(row, n, temperature=1.0, top_k=0, top_p=1.0):
    """n tokens for one row of logits, seeds 0..n-1 at step 0."""
    logits = np.repeat(row[None], n, axis=0)
    return sample(logits, np.arange(n), 0, temperature, top_k, top_p)


def test_sampled_frequencies_follow_the_softmax_at_the_temperature():
    row = LOGITS[0]
    for temperature in (1.0, 0.5):
        p = np.exp(row / temperature) / np.exp(row / temperature).sum()
        got = np.bincount(draws(row, 4000, temperature), minlength=5) / 4000
        np.testing.assert_allclose(got, p, atol=0.03)


def test_top_k_and_top_p_keep_only_the_allowed_tokens_renormalized():
    row = LOGITS[0]  # probabilities at temperature 1: 0.55, 0.12, 0.20, 0.03, 0.07 (rounded)
    assert set(draws(row, 2000, top_k=2)) == {0, 2}
    p = np.exp(row) / np.exp(row).sum()
    got = np.bincount(draws(row, 4000, top_k=2), minlength=5) / 4000
    np.testing.assert_allclose(got[[0, 2]], p[[0, 2]] / p[[0, 2]].sum(), atol=0.03)
    assert set(draws(row, 2000, top_p=0.7)) == {0, 2}  # 0.55 < 0.7 <= 0.55 + 0.20
    assert set(draws(row, 2000, top_p=0.5)) == {0}
    assert set(draws(row, 2000, top_k=3, top_p=0.99)) == {0, 1, 2}
    assert 4 not in set(draws(LOGITS[1], 2000))  # -inf masks a token


def test_a_draw_depends_only_on_the_rows_logits_seed_and_step():
    a = sample(LOGITS, [11, 12], [3, 4], 1.0, 0, 1.0)
    b = sample(LOGITS[::-1].copy(), [12, 11], [4, 3], 1.0, 0, 1.0)
    np.testing.assert_array_equal(a, b[::-1])
    assert len({tuple(sample(LOGITS, s, 0, 1.0, 0, 1.0)) for s in range(40)}) > 1


@pytest.mark.parametrize(
    "logits, args, message",
    [
        (LOGITS, (0, 0, -1.0, 0, 1.0), "row 0: temperature must be finite and >= 0"),
        (LOGITS, (0, 0, 1.0, -2, 1.0), "row 0: top_k must be >= 0"),
        (LOGITS, (0, 0, 1.0, 0, 0.0), r"row 0: top_p must be in \(0, 1\]"),
        (LOGITS, (0, 0, 1.0, 0, 1.5), r"row 0: top_p must be in \(0, 1\], got 1.5"),
        (np.array([[0.0, np.nan]], np.float32), (0, 0, 1.0, 0, 1.0), "row 0 .* holds nan"),
        (np.array([[-np.inf, -np.inf]], np.float32), (0, 0, 0.0, 0, 1.0), "row 0 .* masks every token"),
    ],
)
def test_bad_sampling_arguments_raise_naming_the_row(logits, args, message):
    with pytest.raises(RuntimeError, match=r"\[sample_tokens\] " + message):
        sample(logits, *args)


def test_per_row_arguments_of_the_wrong_shape_or_dtype_raise_naming_them():
    l, i, f = flow.tensor(LOGITS), flow.tensor([0, 0]), flow.tensor([1.0, 1.0])
    with pytest.raises(RuntimeError, match=r"seeds must be integer of shape \(2,\)"):
        flow.sample_tokens(l, flow.tensor([0]), i, f, i, f)
    with pytest.raises(RuntimeError, match="temperature must be floating"):
        flow.sample_tokens(l, i, i, i, i, f)
    with pytest.raises(RuntimeError, match=r"logits must be floating \(batch, vocabulary\)"):
        flow.sample_tokens(l[0], i, i, f, i, f)
