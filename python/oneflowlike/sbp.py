"""OneFlow's `flow.sbp`: how one mesh axis lays a global tensor over its ranks.

`split(i)` splits tensor axis i, `broadcast` gives every rank the whole tensor, and
`partial_sum` / `partial_max` / `partial_min` hold pieces reduced with that op. A sequence of
them (one per mesh axis of the placement) is an n-d SBP.
"""

from ._C import NdSbp as nd_sbp  # noqa: F401
from ._C import Placement as placement  # noqa: F401
from ._C import Sbp as sbp

__all__ = [
    "sbp",
    "nd_sbp",
    "split",
    "broadcast",
    "partial_sum",
    "partial_max",
    "partial_min",
    "parse",
    "placement",
]


def split(axis=None, *, dim=None):
    """S(axis): rank r of p holds a balanced slice of tensor axis `axis`; `dim=` as in OneFlow."""
    if (axis is None) == (dim is None):
        raise TypeError("split() takes exactly one of axis or dim")
    return sbp.split(axis if axis is not None else dim)


def parse(text):
    """One Sbp from "S(0)", "B", "P(sum)", ...; several from "(S(0), B)" (as an NdSbp)."""
    text = text.strip()
    return nd_sbp.parse(text) if text[:1] in "([" else sbp.parse(text)


broadcast = sbp.broadcast()
partial_sum = sbp.partial("sum")
partial_max = sbp.partial("max")
partial_min = sbp.partial("min")
