"""flow.backends.mps: Apple's Metal backend, which this build never has."""


def is_available():
    return False


def is_built():
    return False
