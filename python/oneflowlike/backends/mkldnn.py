"""flow.backends.mkldnn: oneDNN, which this build does not use (its CPU kernels are its own)."""

enabled = False


def is_available():
    return False
