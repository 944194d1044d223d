"""flow.backends.openmp: the CPU kernels run on oneTBB's threads, not OpenMP."""


def is_available():
    return False
