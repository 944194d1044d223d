"""Shared numerics helpers: numpy conversion, closeness checks, finite-difference gradients."""

import numpy as np

import oneflowlike as flow

FLOAT_DTYPES = {
    "float16": flow.float16,
    "bfloat16": flow.bfloat16,
    "float32": flow.float32,
    "float64": flow.float64,
}
# Forward tolerances (rtol, atol) per dtype, for comparing against a float64 numpy reference.
FWD_TOL = {
    flow.float16: (1e-2, 1e-2),
    flow.bfloat16: (3e-2, 3e-2),
    flow.float32: (1e-5, 1e-6),
    flow.float64: (1e-10, 1e-12),
}


def to_numpy(t):
    """A numpy copy of a tensor (bfloat16 goes through float32, which numpy lacks)."""
    if isinstance(t, flow.Tensor):
        t = t.detach()
        if t.dtype == flow.bfloat16:
            t = t.float()
        return np.array(t.numpy())
    return np.asarray(t)


def tensor(array, dtype=None, requires_grad=False):
    """A tensor holding a copy of `array`, optionally cast to `dtype`."""
    t = flow.tensor(np.asarray(array))
    if dtype is not None:
        t = t.to(dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


def assert_close(actual, expected, rtol=None, atol=None, dtype=None, equal_nan=False):
    """Checks a flow tensor against a numpy array: shape, optionally dtype, and values.

    Tolerances default to FWD_TOL for the tensor's dtype."""
    if isinstance(actual, flow.Tensor):
        if dtype is not None:
            assert actual.dtype == dtype, f"dtype {actual.dtype} != {dtype}"
        default = FWD_TOL.get(actual.dtype, (0, 0))
    else:
        default = (1e-5, 1e-6)
    rtol = default[0] if rtol is None else rtol
    atol = default[1] if atol is None else atol
    a = to_numpy(actual)
    e = np.asarray(expected)
    assert a.shape == e.shape, f"shape {a.shape} != expected {e.shape}"
    if a.dtype == np.bool_ or e.dtype == np.bool_ or np.issubdtype(a.dtype, np.integer):
        np.testing.assert_array_equal(a, e)
    else:
        np.testing.assert_allclose(
            a.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol, equal_nan=equal_nan
        )


def _project(out, weight):
    """A scalar that depends on every output element: sum(out * weight)."""
    return (out * weight).sum()


def _weights(out_shape, seed=1234):
    return np.random.RandomState(seed).uniform(0.5, 1.5, size=out_shape)


def numeric_grad(fn, arrays, eps=1e-6, weight=None):
    """Central finite differences of sum(fn(*arrays) * weight), evaluated in float64."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]

    def f():
        with flow.no_grad():
            out = fn(*[flow.tensor(a) for a in arrays])
            return float(np.sum(to_numpy(out).astype(np.float64) * weight))

    grads = []
    for a in arrays:
        g = np.zeros_like(a)
        flat, gflat = a.reshape(-1), g.reshape(-1)
        for i in range(flat.size):
            orig = flat[i]
            flat[i] = orig + eps
            hi = f()
            flat[i] = orig - eps
            lo = f()
            flat[i] = orig
            gflat[i] = (hi - lo) / (2 * eps)
        grads.append(g)
    return grads


def check_grad(fn, inputs, eps=1e-6, rtol=1e-5, atol=1e-6, dtype=flow.float64):
    """Compares autograd's gradients of fn with central finite differences in float64.

    `inputs` are numpy arrays; every one is differentiated. The analytic pass runs in
    `dtype` (float64 by default) and backpropagates a fixed random weighting of the output,
    so each output element contributes. Returns the analytic gradients as numpy arrays."""
    arrays = [np.asarray(a, dtype=np.float64) for a in inputs]
    leaves = [tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
    out = fn(*leaves)
    assert out.requires_grad, "the output does not require grad"
    weight = _weights(tuple(out.shape))
    _project(out, tensor(weight, dtype=out.dtype)).backward()
    expected = numeric_grad(fn, arrays, eps, weight)
    analytic = []
    for i, (leaf, num) in enumerate(zip(leaves, expected)):
        assert leaf.grad is not None, f"input {i} got no gradient"
        assert tuple(leaf.grad.shape) == num.shape, f"input {i}: grad shape {leaf.grad.shape}"
        assert leaf.grad.dtype == leaf.dtype, f"input {i}: grad dtype {leaf.grad.dtype}"
        got = to_numpy(leaf.grad)
        np.testing.assert_allclose(got, num, rtol=rtol, atol=atol, err_msg=f"gradient of input {i}")
        analytic.append(got)
    return analytic


def rng(seed=0):
    return np.random.RandomState(seed)
