"""nn.init: gains, fans and the statistics of each initialiser."""

import math

import numpy as np
import pytest

import oneflowlike as flow
from oneflowlike import nn
from oneflowlike.nn import init

torch = pytest.importorskip("torch")


def param(*shape):
    return nn.Parameter(flow.empty(*shape))


def test_calculate_gain_matches_torch_table():
    assert init.calculate_gain("linear") == 1.0
    assert init.calculate_gain("conv2d") == 1.0
    assert init.calculate_gain("sigmoid") == 1.0
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("leaky_relu") == pytest.approx(math.sqrt(2 / (1 + 0.01**2)))
    assert init.calculate_gain("leaky_relu", math.sqrt(5)) == pytest.approx(math.sqrt(1 / 3))
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError):
        init.calculate_gain("swish")


def test_fan_in_and_fan_out_include_the_receptive_field():
    assert init._calculate_fan_in_and_fan_out(flow.empty(4, 3)) == (3, 4)
    assert init._calculate_fan_in_and_fan_out(flow.empty(8, 2, 3, 3)) == (18, 72)
    with pytest.raises(ValueError):
        init._calculate_fan_in_and_fan_out(flow.empty(5))


def test_initialisers_fill_in_place_without_recording_grad():
    p = param(4, 4)
    for fn in (init.uniform_, init.normal_, init.ones_, init.zeros_, init.xavier_uniform_):
        assert fn(p) is p
        assert p.is_leaf and p.grad_fn is None and p.requires_grad


def test_constant_ones_zeros_and_eye():
    p = param(3, 4)
    np.testing.assert_array_equal(init.constant_(p, 0.5).numpy(), np.full((3, 4), 0.5))
    np.testing.assert_array_equal(init.ones_(p).numpy(), np.ones((3, 4)))
    np.testing.assert_array_equal(init.zeros_(p).numpy(), np.zeros((3, 4)))
    np.testing.assert_array_equal(init.eye_(p).numpy(), np.eye(3, 4))


def test_uniform_and_normal_have_the_requested_statistics():
    flow.manual_seed(0)
    u = init.uniform_(param(200, 200), -2.0, 3.0).numpy()
    assert u.min() >= -2.0 and u.max() <= 3.0
    assert abs(u.mean() - 0.5) < 0.05
    n = init.normal_(param(200, 200), 1.0, 2.0).numpy()
    assert abs(n.mean() - 1.0) < 0.05 and abs(n.std() - 2.0) < 0.05


def test_xavier_uniform_bound_and_xavier_normal_std():
    flow.manual_seed(0)
    fan_in, fan_out = 300, 200
    bound = math.sqrt(6 / (fan_in + fan_out))
    w = init.xavier_uniform_(param(fan_out, fan_in)).numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    w = init.xavier_normal_(param(fan_out, fan_in), gain=2.0).numpy()
    assert w.std() == pytest.approx(2 * math.sqrt(2 / (fan_in + fan_out)), rel=0.05)


def test_kaiming_uniform_and_normal_follow_the_fan_mode():
    flow.manual_seed(0)
    w = init.kaiming_uniform_(param(256, 128), a=math.sqrt(5)).numpy()
    assert np.abs(w).max() <= 1 / math.sqrt(128)
    w = init.kaiming_normal_(param(256, 128), mode="fan_out", nonlinearity="relu").numpy()
    assert w.std() == pytest.approx(math.sqrt(2 / 256), rel=0.05)
    with pytest.raises(ValueError):
        init.kaiming_normal_(param(2, 2), mode="fan_avg")


def test_trunc_normal_stays_inside_bounds_with_normal_like_body():
    flow.manual_seed(0)
    w = init.trunc_normal_(param(200, 200), mean=0.0, std=1.0, a=-1.0, b=1.0).numpy()
    assert w.min() >= -1.0 and w.max() <= 1.0
    # the truncated standard normal on [-1, 1] has std ~0.5396 (a clamp would give ~0.72)
    assert w.std() == pytest.approx(0.5396, abs=0.02)


def test_orthogonal_gives_orthonormal_rows_or_columns_scaled_by_gain():
    wide = flow.empty(6, 4, 3, dtype=flow.float64)
    flow.nn.init.orthogonal_(wide, gain=2.0)
    m = wide.numpy().reshape(6, 12)
    np.testing.assert_allclose(m @ m.T, 4.0 * np.eye(6), atol=1e-12)
    tall = flow.nn.init.orthogonal_(flow.empty(6, 3, dtype=flow.float64))
    np.testing.assert_allclose(tall.numpy().T @ tall.numpy(), np.eye(3), atol=1e-12)
    with pytest.raises(ValueError, match=r"\[orthogonal_\] only tensors with 2 or more"):
        flow.nn.init.orthogonal_(flow.empty(3))


def test_dirac_and_sparse_match_pytorch_structure():
    ours = flow.nn.init.dirac_(flow.empty(4, 2, 3, 3), groups=2)
    theirs = torch.nn.init.dirac_(torch.empty(4, 2, 3, 3), groups=2)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    sparse = flow.nn.init.sparse_(flow.empty(10, 3), sparsity=0.3)
    assert ((sparse.numpy() == 0).sum(axis=0) >= 3).all()
    assert flow.nn.init.xavier_uniform is not None and flow.nn.init.orthogonal is not None
