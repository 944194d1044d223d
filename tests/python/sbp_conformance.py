"""SBP conformance checker: every registered op, every 1-d input layout, 2 and 3 ranks.

One process plays every rank (no communication: the inputs are built in the layout tried). For
each op case and each combination of input layouts (S(i) of every axis, B, and for floating
inputs P(sum), P(max), P(min) from random uneven pieces), each rank runs the op's local
function, and the pieces are matched against the logical result for each output layout. The
report has (a) declared signatures that give a wrong result and (b) valid ones not declared.

    python tests/python/sbp_conformance.py       # prints the report
"""

import itertools

import numpy as np

import oneflowlike as flow
import oneflowlike.nn.functional as F
from oneflowlike import _C

S, B = flow.sbp.split, flow.sbp.broadcast
PSUM, PMAX, PMIN = flow.sbp.partial_sum, flow.sbp.partial_max, flow.sbp.partial_min
RANKS = (2, 3)


def _f(*shape, positive=False, seed=0):
    a = np.random.default_rng([seed, *shape]).standard_normal(shape).astype(np.float32)
    return np.abs(a) + 0.5 if positive else a


def _i(high, *shape, seed=0):
    return np.random.default_rng([seed, high, *shape]).integers(0, high, shape).astype(np.int64)


def _spd(batch, n):
    """A batch of symmetric positive-definite matrices (Cholesky, eigh, ldl)."""
    a = _f(batch, n, n)
    return (a @ a.transpose(0, 2, 1) + n * np.eye(n)).astype(np.float32)


def _ldl(batch, n):
    """ldl_factor's (LD, pivots) of a batch of symmetric matrices."""
    return [t.numpy() for t in _C.linalg_ldl_factor_ex(flow.tensor(_spd(batch, n)))[:2]]


# getrf's pivots of two 3 x 3 matrices (1-based row swaps), int32 as LAPACK gives them.
PIVOTS = np.array([[2, 2, 3], [3, 3, 3]], np.int32)


def _b(*shape):
    return np.random.default_rng(list(shape)).integers(0, 2, shape).astype(bool)


X, Y, ROW = _f(5, 4), _f(5, 4, seed=1), _f(4, seed=2)
POS = _f(5, 4, positive=True)
UNARY = {
    "neg": lambda x: -x,
    "abs": lambda x: x.abs(),
    "exp": lambda x: x.exp(),
    "sin": lambda x: x.sin(),
    "cos": lambda x: x.cos(),
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "relu": lambda x: x.relu(),
    "gelu": lambda x: F.gelu(x),
    "silu": lambda x: F.silu(x),
    "clamp": lambda x: x.clamp(-0.5, 0.5),
    "square": lambda x: x.square(),
    "expm1": lambda x: x.expm1(),
    "erf": lambda x: x.erf(),
    "to": lambda x: x.to(flow.float64),
    "sign": lambda x: x.sign(),
    "floor": lambda x: x.floor(),
    "ceil": lambda x: x.ceil(),
    "round": lambda x: x.round(),
    "softmax": lambda x: x.softmax(1),
    "log_softmax": lambda x: x.log_softmax(1),
    "sum": lambda x: x.sum(0),
    "prod": lambda x: x.prod(1),
    "amax": lambda x: x.amax(0),
    "amin": lambda x: x.amin(1),
    "max": lambda x: x.max(0)[0],
    "min": lambda x: x.min(1)[0],
    "argmax": lambda x: x.argmax(0),
    "argmin": lambda x: x.argmin(1, keepdim=True),
    "view": lambda x: x.view(20),
    "permute": lambda x: x.permute(1, 0),
    "transpose": lambda x: x.transpose(0, 1),
    "narrow": lambda x: x.narrow(1, 1, 2),
    "slice": lambda x: x[1:4],
    "select": lambda x: x.select(1, 2),
    "unsqueeze": lambda x: x.unsqueeze(1),
    "clone": lambda x: x.clone(),
    "clamp_": lambda x: x.clamp_(-0.5, 0.5),
    "fill_": lambda x: x.fill_(2.0),
    "zero_": lambda x: x.zero_(),
}
POSITIVE = {
    "log": lambda x: x.log(),
    "sqrt": lambda x: x.sqrt(),
    "rsqrt": lambda x: x.rsqrt(),
    "reciprocal": lambda x: x.reciprocal(),
    "log1p": lambda x: x.log1p(),
}
BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "maximum": lambda a, b: flow.maximum(a, b),
    "logaddexp": lambda a, b: flow.logaddexp(a, b),
    "hypot": lambda a, b: flow.hypot(a, b),
    "minimum": lambda a, b: flow.minimum(a, b),
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "add_": lambda a, b: a.add_(b),
    "sub_": lambda a, b: a.sub_(b),
    "mul_": lambda a, b: a.mul_(b),
    "div_": lambda a, b: a.div_(b),
    "copy_": lambda a, b: a.copy_(b),
}

# The fused activation backward ops f(x, grad), called as the backward definitions call them.
for _name in ("gelu", "gelu_tanh", "silu", "sigmoid", "tanh"):
    BINARY[_name + "_backward"] = lambda a, b, _n=_name: _C.dispatch(_n + "_backward", [a, b])[0]


def _dispatch(name, **attrs):
    """The op `name` called as backward definitions call it; its first output."""
    return lambda *ts: _C.dispatch(name, list(ts), attrs)[0]


# name -> (function of tensors, input arrays)
CASES = {n: (f, [X]) for n, f in UNARY.items()}
CASES.update({n: (f, [POS]) for n, f in POSITIVE.items()})
CASES.update({n: (f, [X, ROW if n.endswith("_") else Y]) for n, f in BINARY.items()})
CASES.update(
    {
        "pow": (lambda a, b: a**b, [POS, Y]),
        "pow_scalar": (lambda a: a**3.0, [X]),
        "full_like": (lambda a: flow.full_like(a, 2.0), [X]),
        "floor_divide": (lambda a, b: a // b, [_i(9, 5, 4) + 1, _i(3, 4) + 1]),
        "remainder": (lambda a, b: a % b, [_i(9, 5, 4), _i(3, 4) + 1]),
        "logical_not": (lambda a: a.logical_not(), [_b(5, 4)]),
        "logical_and": (lambda a, b: a.logical_and(b), [_b(5, 4), _b(4)]),
        "logical_or": (lambda a, b: a.logical_or(b), [_b(5, 4), _b(4)]),
        "logical_xor": (lambda a, b: a.logical_xor(b), [_b(5, 4), _b(4)]),
        "all": (lambda a: a.all(0), [_b(5, 4)]),
        "any": (lambda a: a.any(1), [_b(5, 4)]),
        "where": (lambda c, a, b: flow.where(c, a, b), [_b(5, 4), X, ROW]),
        "matmul": (lambda a, b: a @ b, [X, _f(4, 3)]),
        "matmul_sum": (lambda a, b: flow._C.matmul_sum(a, b), [_f(5, 3, 4), _f(5, 4, 2)]),
        "reshape": (lambda x: x.reshape(8, 3), [_f(4, 6)]),
        "expand": (lambda x: x.expand(5, 4), [_f(5, 1)]),
        "squeeze": (lambda x: x.squeeze(1), [_f(5, 1, 4)]),
        "flatten": (lambda x: x.flatten(1), [_f(5, 2, 2)]),
        # A fresh generator per call: every layout draws from the same counters.
        "uniform_": (lambda x: x.uniform_(-1.0, 2.0, generator=flow.Generator(7)), [X]),
        "normal_": (lambda x: x.normal_(0.5, 2.0, generator=flow.Generator(7)), [X]),
        "slice_backward": (
            lambda g: _C.dispatch(
                "slice_backward", [g], {"dim": 1, "start": 1, "stop": 7, "step": 2, "sizes": [5, 8]}
            )[0],
            [_f(5, 3)],
        ),
        "layer_norm": (lambda x, w, b: F.layer_norm(x, (4,), w, b), [X, ROW, _f(4, seed=3)]),
        "rms_norm": (lambda x, w: F.rms_norm(x, (4,), w), [X, ROW]),
        "adam_moment_": (lambda x, g: flow._C.adam_moment_(x, g, 0.9, square=True), [X, Y]),
        "adam_step_": (
            lambda p, m, v: flow._C.adam_step_(p, m, v, 0.99, 0.1, 0.5, 1e-8),
            [X, Y, POS],
        ),
        "flash_attention": (
            lambda q, k, v: flow._C.flash_attention(q, k, v, 0.5),
            [_f(2, 3, 4, 4), _f(2, 3, 5, 4, seed=1), _f(2, 3, 5, 3, seed=2)],
        ),
        # Context parallelism: the query rows split, each shard causal at its offset (more
        # queries than keys: the last rows see every key).
        "flash_attention (causal)": (
            lambda q, k, v: flow._C.flash_attention(q, k, v, 0.5, True),
            [_f(2, 3, 7, 4), _f(2, 3, 5, 4, seed=1), _f(2, 3, 5, 3, seed=2)],
        ),
        # What graph mode's fusion makes of gelu(x + row) * x: registers 0 and 1 the inputs,
        # then add (binary 0), gelu (unary 11), mul (binary 2); the sum and the product out.
        "_fused_elementwise": (
            _dispatch(
                "_fused_elementwise",
                inputs=2,
                program=[1, 0, 0, 1, 0, 0, 11, 2, 0, 0, 1, 2, 3, 0, 0],
                scalars=[0] * 6,
                outputs=[4, 2],
                shape=[5, 4],
                dtype=flow.float32,
                parts="gelu(x + row) * x",
            ),
            [X, ROW],
        ),
        "softmax_backward": (_dispatch("softmax_backward", axis=1), [Y, X]),
        "log_softmax_backward": (_dispatch("log_softmax_backward", axis=-1), [Y, X]),
        # Reseeded on every call: the shards must draw the logical tensor's mask.
        "dropout": (lambda x: (flow.manual_seed(5), F.dropout(x, 0.5))[1], [X]),
        "nll_loss": (lambda x, t: F.nll_loss(x, t, reduction="none"), [X, _i(4, 5)]),
        "nll_loss_backward": (
            _dispatch("nll_loss_backward", ignore_index=2, classes=4),
            [_f(5, seed=6), _i(4, 5)],
        ),
        "index_select": (lambda x, i: x.index_select(0, i), [X, _i(5, 3)]),
        "gather": (lambda x, i: x.gather(1, i), [X, _i(4, 5, 2)]),
        "embedding": (lambda w, i: F.embedding(i, w), [_f(7, 4), _i(7, 5)]),
        "cat": (lambda a, b: flow.cat([a, b], 0), [X, _f(3, 4)]),
        "scatter_add": (lambda x, i, s: x.scatter_add(1, i, s), [X, _i(4, 5, 2), _f(5, 2)]),
        "index_add": (lambda x, i, s: x.index_add(0, i, s), [X, _i(5, 3), _f(3, 4)]),
        "scatter": (lambda x, i, s: x.scatter(1, i, s), [X, _i(4, 5, 2), _f(5, 2)]),
        "masked_scatter": (lambda x, m, s: x.masked_scatter(m, s), [X, _b(5, 4), _f(20)]),
        "scatter_": (lambda x, i, s: x.scatter_(1, i, s), [X, _i(4, 5, 2), _f(5, 2)]),
        "masked_scatter_": (lambda x, m, s: x.masked_scatter_(m, s), [X, _b(5, 4), _f(20)]),
        "sort": (lambda x: x.sort(1, descending=True)[0], [X]),
        "argsort": (lambda x: x.argsort(0), [X]),
        "topk": (lambda x: x.topk(2, 1)[0], [X]),
        # Any dim but the transformed one splits (complex inputs: no partials are tried).
        "_fft_c2c": (lambda z: _C._fft_c2c(z, 1, True, 0.5), [_f(5, 6) + 1j * _f(5, 6, seed=1)]),
        "cumsum": (lambda x: x.cumsum(0), [X]),
        "tril": (lambda x: x.tril(1), [_f(2, 5, 4)]),
        # Each matrix of the batch on its own: batch splits, the matrix dims broadcast.
        "linalg_svd": (lambda x: flow.linalg.svd(x)[0], [_f(3, 5, 4)]),
        "linalg_lu_factor_ex": (lambda x: _C.linalg_lu_factor_ex(x)[0], [_f(3, 4, 4)]),
        "lu_permutation": (lambda p: _C.lu_permutation(p, 3), [PIVOTS]),
        "solve_triangular": (
            lambda a, b: _C.linalg_solve_triangular(a, b, upper=False),
            [_f(3, 3, 3), _f(3, 3, 2)],
        ),
        "linalg_cholesky_ex": (lambda x: _C.linalg_cholesky_ex(x)[0], [_spd(3, 4)]),
        "geqrf": (lambda x: flow.geqrf(x)[0], [_f(3, 5, 3)]),
        "linalg_qr": (lambda x: _C.linalg_qr(x)[0], [_f(3, 5, 3)]),
        "linalg_eigh": (lambda x: _C.linalg_eigh(x)[0], [_spd(3, 4)]),
        "linalg_ldl_factor_ex": (lambda x: _C.linalg_ldl_factor_ex(x)[0], [_spd(3, 4)]),
        "linalg_ldl_solve": (_C.linalg_ldl_solve, [*_ldl(2, 3), _f(2, 3, 2)]),
        "linalg_eig": (lambda x: _C.linalg_eig(x)[0], [_f(3, 4, 4)]),
        "triu": (lambda x: x.triu(-1), [_f(2, 5, 4)]),
        # A fresh generator per call: every rank and the reference draw the same counters.
        "multinomial": (lambda p: p.multinomial(3, generator=flow.Generator(7)), [POS]),
        # A row's token depends on its own logits, seed, step and settings only.
        "sample_tokens": (
            flow.sample_tokens,
            [_f(5, 4), _i(100, 5), _i(9, 5, seed=1), _f(5, positive=True), _i(4, 5, seed=2),
             np.full(5, 0.9, np.float32)],
        ),  # fmt: skip
        "conv2d": (
            lambda x, w, b: F.conv2d(x, w, b, padding=1),
            [_f(3, 4, 5, 5), _f(5, 4, 3, 3, seed=1), _f(5, seed=2)],
        ),
        "max_pool2d": (lambda x: F.max_pool2d(x, 2), [_f(3, 4, 4, 6)]),
        "avg_pool2d": (lambda x: F.avg_pool2d(x, 2, padding=1), [_f(3, 4, 4, 6)]),
    }
)

# torch.* and torch.special elementwise math (ops/unary_math.cpp, ops/binary_math.cpp), on
# inputs inside each function's domain.
UNIT = np.clip(X, -0.9, 0.9) * 0.9
PROB = (np.tanh(X) + 1.0) / 2.2 + 0.02
ABOVE1 = POS + 1.0
_MATH1 = {
    "acos": UNIT, "asin": UNIT, "atan": X, "sinh": X, "cosh": X, "tan": UNIT, "asinh": X,
    "acosh": ABOVE1, "atanh": UNIT, "exp2": X, "log2": POS, "log10": POS, "erfc": X,
    "erfinv": UNIT, "lgamma": POS, "digamma": POS, "i0": X, "sinc": X, "trunc": X * 3,
    "special_i0e": X, "special_i1": X, "special_i1e": X, "special_ndtri": PROB,
    "special_log_ndtr": X, "special_erfcx": X, "special_entr": POS, "special_bessel_j0": X,
    "special_bessel_j1": X, "special_bessel_y0": POS, "special_bessel_y1": POS,
    "special_spherical_bessel_j0": X,
}  # fmt: skip
CASES.update({n: (lambda x, _n=n: getattr(_C, _n)(x), [a]) for n, a in _MATH1.items()})
_MATH2 = {
    "atan2": [X, Y], "copysign": [X, Y], "nextafter": [X, Y], "xlogy": [X, POS],
    "special_xlog1py": [X, POS], "special_zeta": [ABOVE1, POS], "igamma": [POS, ABOVE1],
    "igammac": [POS, ABOVE1], "fmod": [X, POS], "fmax": [X, Y], "fmin": [X, ROW],
    "gcd": [_i(30, 5, 4), _i(12, 4) + 1], "lcm": [_i(30, 5, 4), _i(12, 4) + 1],
    "bitwise_and": [_i(64, 5, 4), _i(64, 4, seed=1)], "bitwise_or": [_i(64, 5, 4), _i(64, 4, seed=1)],
    "bitwise_xor": [_i(64, 5, 4), _i(64, 5, 4, seed=1)],
    "bitwise_left_shift": [_i(64, 5, 4), _i(5, 4)],
    "bitwise_right_shift": [_i(64, 5, 4), _i(5, 5, 4)],
}  # fmt: skip
CASES.update({n: (lambda a, b, _n=n: getattr(_C, _n)(a, b), arrs) for n, arrs in _MATH2.items()})
CASES["polygamma"] = (lambda x: flow.polygamma(2, x), [POS])
# No derivative in their first argument (as in PyTorch): it is given detached.
for _name in ("special_zeta", "igamma", "igammac"):
    CASES[_name] = (lambda a, b, _n=_name: getattr(_C, _n)(a.detach(), b), _MATH2[_name])
CASES["bitwise_not"] = (lambda x: ~x, [_i(64, 5, 4)])
# The orthogonal polynomials at small whole degrees (x, then n; no derivative in n).
_POLYNOMIALS = [f"special_chebyshev_polynomial_{k}" for k in "tuvw"] + [
    "special_hermite_polynomial_h", "special_hermite_polynomial_he",
    "special_laguerre_polynomial_l", "special_legendre_polynomial_p",
]  # fmt: skip
for _name in _POLYNOMIALS:
    CASES[_name] = (
        lambda x, n, _n=_name: getattr(_C, _n)(x, n.detach()),
        [UNIT, _i(7, 5, 4).astype(X.dtype)],
    )

# The ops that the backward of conv2d and pooling call, called as the definitions call them.
_CONV = {"stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], "groups": 1}
_POOL = {"kernel_size": [2, 2], "stride": [2, 2], "padding": [1, 1], "count_include_pad": True}
_MAX_POOL = {"kernel_size": [2, 2], "stride": [2, 2], "padding": [0, 0]}
_MAX_POOL_INDICES = _C.dispatch("max_pool2d_indices", [flow.tensor(_f(3, 4, 4, 6))], _MAX_POOL)[0]
CASES.update(
    {
        "conv2d_input_grad": (
            lambda g, w: _C.dispatch("conv2d_input_grad", [g, w], {**_CONV, "input_size": [5, 5]})[
                0
            ],
            [_f(3, 5, 5, 5), _f(5, 4, 3, 3, seed=1)],
        ),
        "conv2d_weight_grad": (
            lambda g, x: _C.dispatch(
                "conv2d_weight_grad", [g, x], {**_CONV, "kernel_size": [3, 3]}
            )[0],
            [_f(3, 5, 5, 5), _f(3, 4, 5, 5, seed=1)],
        ),
        "max_pool2d_indices": (
            lambda x: _C.dispatch("max_pool2d_indices", [x], _MAX_POOL)[0],
            [_f(3, 4, 4, 6)],
        ),
        "max_pool2d_backward": (
            lambda g, i: _C.dispatch("max_pool2d_backward", [g, i], {"input_size": [4, 6]})[0],
            [_f(3, 4, 2, 3), _MAX_POOL_INDICES.numpy()],
        ),
        "avg_pool2d_backward": (
            lambda g: _C.dispatch("avg_pool2d_backward", [g], {**_POOL, "input_size": [4, 6]})[0],
            [_f(3, 4, 3, 4)],
        ),
    }
)

# complex64: the two views between complex64 and float32 (real, imaginary) pairs.
CASES.update(
    {
        "view_as_complex": (lambda x: flow.view_as_complex(x), [_f(5, 3, 2)]),
        "view_as_real": (lambda z: flow.view_as_real(z), [_f(5, 3, 2).view(np.complex64)[..., 0]]),
    }
)

# Cases whose first global op is another registered op with the same rule.
RUNS_AS = {"transpose": "permute", "narrow": "slice", "flash_attention (causal)": "flash_attention"}


# Registered ops without a rule of their own, and why.
COMPOSITE = {
    "masked_fill": "runs as where",
    "linear": "runs as matmul and add",
    "addmm": "runs as matmul, mul and add",
    "baddbmm": "runs as matmul, mul and add",
    "einsum": "runs as sum, permute, reshape and matmul",
    "lerp": "runs as sub, mul and add",
    "addcmul": "runs as mul and add",
    "addcdiv": "runs as div and add",
    "mean": "runs as sum and div",
    "var": "runs as its parts",
    "std": "runs as its parts",
    "logsumexp": "runs as its parts",
    "cross_entropy": "runs as its parts",
    "mse_loss": "runs as its parts",
    "scaled_dot_product_attention": "runs as its parts",
    "split": "runs as narrow",
    "chunk": "runs as narrow",
    "stack": "runs as unsqueeze and cat",
    "contiguous": "a copy only when needed: checked as clone",
    "detach": "no computation: the shard is aliased",
    "batch_norm": "runs as its parts (statistics over the whole batch, as SyncBatchNorm's)",
    "outer": "runs as unsqueeze and mul",
    "mm": "runs as matmul",
    "mv": "runs as matmul",
    "bmm": "runs as matmul",
    "dot": "runs as mul and sum (inner: reshape, transpose and matmul)",
    "movedim": "runs as permute (swapaxes: transpose)",
    "broadcast_to": "runs as expand",
    "repeat": "runs as reshape and expand",
    "repeat_interleave": "runs as unsqueeze, expand and reshape",
    "unbind": "runs as select",
    "isfinite": "runs as sub and eq (isinf: abs and eq; isnan: ne)",
    "nan_to_num": "runs as ne, eq, full_like and where",
    "group_norm": "runs as reshape, layer_norm, mul and add",
    "pad": "runs as narrow, full_like, expand and cat",
    "atleast_1d": "runs as reshape",
    "hstack": "runs as reshape and cat",
    "polar": "runs as cos, sin, mul, stack and view_as_complex",
    "complex": "runs as expand, stack and view_as_complex",
    "real": "runs as view_as_real and select",
    "imag": "runs as view_as_real and select",
    "conj": "runs as view_as_real, select, neg, stack and view_as_complex",
    "linalg_svdvals": "runs as linalg_svd",
    "linalg_pinv": "runs as linalg_svd, masked_fill, reciprocal, mul and matmul",
    "svd": "runs as linalg_svd (and transpose)",
    "interpolate": "runs as index_select (nearest modes) or transpose and matmul; global raises",
    # torch.* elementwise composites (ops/elementwise_composite.cpp)
    "deg2rad": "runs as mul (rad2deg too)",
    "frac": "runs as trunc and sub",
    "sgn": "runs as sign (signbit: copysign and lt)",
    "positive": "the input itself",
    "isposinf": "runs as eq (isneginf too; isreal: full_like)",
    "rsub": "runs as sub",
    "clamp_min": "runs as clamp or maximum (clamp_max: clamp or minimum)",
    "logit": "runs as clamp, sub, div and log",
    "heaviside": "runs as eq, gt and where",
    "ldexp": "runs as pow and mul",
    "logaddexp2": "runs as mul, logaddexp and div",
    "float_power": "runs as to and pow",
    "mvlgamma": "runs as lgamma, sub and add",
    "special_ndtr": "runs as mul and erfc",
    "special_shifted_chebyshev_polynomial_t": "runs as mul, sub and the polynomial",
    "divide": "runs as div, floor_divide or trunc (true_divide, multiply, subtract, negative, "
    "absolute: div, mul, sub, neg, abs)",
    # torch.* layout composites (ops/shape_composite.cpp); index tensors come from arange, so
    # on global tensors the ones through index_select, gather or where raise
    "flip": "runs as index_select (fliplr, flipud; rot90: and transpose)",
    "roll": "runs as narrow and cat",
    "diag": "runs as permute, reshape and slice (diagonal, trace) or eq, cat and where "
    "(diag_embed, diagflat)",
    "take": "runs as reshape and index_select (take_along_dim: expand and gather)",
    "tensor_split": "runs as narrow (hsplit, vsplit, dsplit, split_with_sizes)",
    "meshgrid": "runs as reshape and expand (broadcast_tensors, cartesian_prod: and stack; "
    "block_diag: zeros and cat; kron: reshape and mul)",
    "unravel_index": "runs as remainder and floor_divide",
    "slice_scatter": "runs as slice_backward and where (select_scatter; index_fill: eq, any, "
    "where)",
    "ravel": "runs as reshape (the *_copy forms: the view and clone)",
    # torch.* reductions and products (ops/reduce_composite.cpp)
    "nansum": "runs as ne, where and sum (nanmean, count_nonzero, aminmax, std_mean, var_mean)",
    "kthvalue": "runs as sort and narrow (median, msort)",
    "isclose": "runs as eq, sub, abs, mul, le (equal: eq and all; isin: eq and any)",
    "searchsorted": "runs as lt or le and sum (bucketize)",
    "cross": "runs as select, mul, sub and stack (diff, trapezoid, dist, angle: their parts)",
    "addmv": "runs as matmul, mul and add (addr, addbmm, vdot, tensordot, cov, corrcoef)",
    "fill": "runs as full_like (conj_physical: clone; resolve_conj, resolve_neg: identity)",
}
# Ops whose outputs take different layouts in one signature (the checker lays every output out
# alike), checked by running their declared signatures in the test named.
CHECKED_BY_RUNNING = {
    "layer_norm_backward": "test_nn_sbp.py (rows split: S(d) input grad, P(sum) weight grads)",
    "rms_norm_backward": "test_nn_sbp.py (rows split: S(d) input grad, P(sum) weight grad)",
    "flash_attention_backward": "test_nn_sbp.py (query rows split: S(2) dq, P(sum) dk and dv)",
    "_lstm_layer": "test_nn_sbp.py (batch split: S(1) sequences, S(0) states)",
    "_lstm_layer_backward": "test_nn_sbp.py (batch split: S(0) state grads, P(sum) weight grad)",
    "_gru_layer": "test_nn_sbp.py (batch split: S(1) sequences, S(0) states)",
    "_gru_layer_backward": "test_nn_sbp.py (batch split: S(0) state grads, P(sum) weight grads)",
}
CREATION = {
    "zeros", "ones", "empty", "full", "arange", "linspace", "eye", "rand", "randn", "randint",
    "randperm",
}  # fmt: skip
# Registered ops that raise on global tensors: masked_select's length depends on the data.
NOT_YET = {"masked_select"}
# Ops whose output shape, or whose backward's, depends on the data (masked_scatter's gradient
# for its source is a masked_select): they raise on meta, as PyTorch's nonzero does.
DATA_DEPENDENT = {"masked_select", "masked_scatter", "masked_scatter_"}


def _layouts(arr):
    out = [S(d) for d in range(arr.ndim)] + [B]
    if arr.dtype.kind == "f":
        out += [PSUM, PMAX, PMIN]
    return out


def _pieces(arr, sbp, n, rng):
    """Rank r's local piece of arr under a 1-d sbp over n ranks (uneven random partials)."""
    if sbp.kind == "split":
        return np.array_split(arr, n, axis=sbp.axis)
    if sbp.kind == "broadcast":
        return [arr.copy() for _ in range(n)]
    op = str(sbp)
    if "sum" in op:
        parts = [rng.standard_normal(arr.shape).astype(arr.dtype) * 3 for _ in range(n - 1)]
        return parts + [arr - sum(parts)]
    owner = rng.integers(0, n, arr.shape)
    sign = -1 if "max" in op else 1
    return [
        np.where(
            owner == r, arr, arr + sign * (np.abs(rng.standard_normal(arr.shape)) + 0.1)
        ).astype(arr.dtype)
        for r in range(n)
    ]


def _out_layouts(want):
    """Bool and integer outputs are checked split or broadcast only: partials of them mean
    nothing here (and random data would make comparisons look valid)."""
    out = [S(d) for d in range(want.ndim)] + [B]
    return out + [PSUM, PMAX, PMIN] if want.dtype.kind == "f" else out


def _matches(pieces, want, sbp):
    try:
        if sbp.kind == "split":
            got = np.concatenate(pieces, axis=sbp.axis)
            sizes = [p.shape[sbp.axis] for p in np.array_split(want, len(pieces), axis=sbp.axis)]
            if [p.shape[sbp.axis] for p in pieces] != sizes:
                return False
        elif sbp.kind == "broadcast":
            return all(_close(p, want) for p in pieces)
        else:
            op = str(sbp)
            reduce = np.add if "sum" in op else (np.maximum if "max" in op else np.minimum)
            got = pieces[0]
            for p in pieces[1:]:
                got = reduce(got, p)
        return _close(got, want)
    except ValueError:
        return False


def _close(got, want):
    if got.shape != want.shape:
        return False
    if want.dtype.kind in "biu":
        return np.array_equal(got, want)
    return np.allclose(got, want, rtol=1e-4, atol=1e-4, equal_nan=False)


def _sig_key(ins, outs):
    return (tuple(s.to_string() for s in ins), tuple(s.to_string() for s in outs))


def check_case(name, fn, arrays, n, also_declared=()):
    """(op the case ran, wrong declared signatures, valid undeclared signatures).
    also_declared: extra (inputs, outputs) string tuples treated as declared (to test the
    checker itself)."""
    rng = np.random.default_rng(0)
    want = fn(*[flow.tensor(a) for a in arrays])
    want = np.array((want[0] if isinstance(want, tuple) else want).numpy())
    shapes = [a.shape for a in arrays]

    def run(pieces_per_input, layouts, rank, out):
        ts = [
            _C.sbp_simulated_global(flow.tensor(p[rank]), list(s), l, rank, n)
            for p, s, l in zip(pieces_per_input, shapes, layouts)
        ]
        return np.array(_C.sbp_run_as_laid_out(lambda: fn(*ts), out)[0].numpy())

    probe = [_C.sbp_simulated_global(flow.tensor(a), list(a.shape), B, 0, n) for a in arrays]
    op, declared = _C.sbp_declared(lambda: fn(*probe))
    # Inputs in the op's order; an absent optional input (rms_norm's bias) is left out.
    declared = {_sig_key(i[: len(arrays)], o[:1]) for i, o in declared} | set(also_declared)
    wrong, extra = [], []
    for layouts in itertools.product(*[_layouts(a) for a in arrays]):
        pieces = [_pieces(a, l, n, rng) for a, l in zip(arrays, layouts)]
        valid_b = False
        for out in _out_layouts(want):
            key = _sig_key(layouts, [out])
            try:
                got = [run(pieces, layouts, r, out) for r in range(n)]
                ok = _matches(got, want, out)
            except Exception:  # a layout the local function cannot take (e.g. shapes)
                ok = False
            valid_b |= ok and out.kind == "broadcast"
            # Identical pieces are trivially a valid P(max) or P(min): not worth listing.
            trivial = valid_b and out.kind == "partial" and "sum" not in str(out)
            if key in declared and not ok:
                wrong.append(key)
            elif ok and key not in declared and not trivial:
                extra.append(key)
    return op, wrong, extra


def _fmt(key):
    return ", ".join(key[0]) + " -> " + ", ".join(key[1])


def report():
    """{op: (wrong, valid undeclared)} over 2 and 3 ranks, and registered ops not covered."""
    result = {}
    for name, (fn, arrays) in CASES.items():
        wrong, extra = set(), set()
        for n in RANKS:
            op, w, e = check_case(name, fn, [a.copy() for a in arrays], n)
            if op != RUNS_AS.get(name, name):
                wrong.add(f"the case ran {op}, not {name}")
            wrong |= {f"{_fmt(k)} on {n} ranks" for k in w}
            extra |= {_fmt(k) for k in e}
        result[name] = (op, sorted(wrong), sorted(extra))
    registered = {op["name"] for op in _C.registered_ops()}
    uncovered = sorted(
        registered - set(CASES) - set(COMPOSITE) - set(CHECKED_BY_RUNNING) - CREATION - NOT_YET
    )
    return result, uncovered


if __name__ == "__main__":
    result, uncovered = report()
    for name, (op, wrong, extra) in result.items():
        for w in wrong:
            print(f"WRONG {name}: {w}")
        if extra:
            print(f"{name}: valid but not declared: " + "; ".join(extra))
    print("not covered:", uncovered or "none")
    print("composite:", ", ".join(sorted(COMPOSITE)))
    print("no rule yet (raise on global tensors):", ", ".join(sorted(NOT_YET)) or "none")
