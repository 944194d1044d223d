"""Host-side scalar helpers shared by the optimizers."""

import struct


def f32(value):
    """value rounded to float32, as torch's 0-d float32 state tensors (ASGD's eta and mu, NAdam's
    mu_product) hold it: matching torch bit for bit needs the same rounding."""
    return struct.unpack("f", struct.pack("f", float(value)))[0]
