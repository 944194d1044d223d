"""Shared helpers for framework ranks: numpy round trips and deterministic per-rank data."""

import json
import sys

import numpy as np

import oneflowlike as flow

# One per dtype class: bool, unsigned and signed integers, half floats, floats.
DTYPES = {
    "bool": flow.bool,
    "uint8": flow.uint8,
    "int8": flow.int8,
    "int32": flow.int32,
    "int64": flow.int64,
    "float16": flow.float16,
    "bfloat16": flow.bfloat16,
    "float32": flow.float32,
    "float64": flow.float64,
}


def to_np(t):
    if t.dtype == flow.bfloat16:
        t = t.float()
    return np.array(t.numpy())


def data(name, rank, shape, salt=0):
    """Small integers (exact in every dtype, no overflow when 4 ranks add or multiply them)."""
    rng = np.random.default_rng([rank, salt, len(name)])
    if name == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    low = 0 if name == "uint8" else -3
    arr = rng.integers(low, 4, shape)
    return arr.astype(np.float32 if name == "bfloat16" else np.dtype(name))


def tensor(arr, name):
    return flow.tensor(arr, dtype=DTYPES[name])


def check(what, got, want, rtol=0.0):
    """Raises naming what differs; got may be a tensor."""
    got = to_np(got) if isinstance(got, flow.Tensor) else np.asarray(got)
    want = np.asarray(want)
    ok = got.shape == want.shape and np.allclose(
        got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=rtol
    )
    if not ok:
        raise AssertionError(
            f"[{what}] got {got.shape} {got.ravel()[:12]}, want "
            f"{want.shape} {want.ravel()[:12]}"
        )


def report(**info):
    sys.stdout.write(json.dumps(info) + "\n")  # one write: ranks sharing a pipe do not interleave
    sys.stdout.flush()
