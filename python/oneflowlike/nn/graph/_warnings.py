"""Graph mode's warnings, each shown once a process (configuration hints that mean nothing here,
a step that runs uncaptured)."""

import warnings

_warned = set()


def warn_once(message):
    if message not in _warned:
        _warned.add(message)
        warnings.warn(f"[graph] {message}", stacklevel=3)
