"""flow.special: torch.special's functions. Those only torch.special has are ops of the registry
bound on the extension module as special_<name> (ops/unary_math.cpp, ops/binary_math.cpp,
ops/elementwise_composite.cpp), as PyTorch's torch.special_<name> aliases are; the others are
the flow.* functions under their torch.special names."""

from . import _C
from . import nn as _nn

_OWN = [
    "i0e",
    "i1",
    "i1e",
    "ndtr",
    "ndtri",
    "log_ndtr",
    "erfcx",
    "entr",
    "xlog1py",
    "zeta",
    "multigammaln",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "spherical_bessel_j0",
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
]
globals().update({name: getattr(_C, "special_" + name) for name in _OWN})

# torch.special name -> the flow.* function it is.
_SAME = {
    "erf": "erf",
    "erfc": "erfc",
    "erfinv": "erfinv",
    "expm1": "expm1",
    "exp2": "exp2",
    "log1p": "log1p",
    "expit": "sigmoid",
    "logit": "logit",
    "gammaln": "lgamma",
    "digamma": "digamma",
    "psi": "digamma",
    "polygamma": "polygamma",
    "gammainc": "igamma",
    "gammaincc": "igammac",
    "i0": "i0",
    "modified_bessel_i0": "i0",
    "sinc": "sinc",
    "round": "round",
    "xlogy": "xlogy",
    "logsumexp": "logsumexp",
}
globals().update({name: getattr(_C, flow_name) for name, flow_name in _SAME.items()})
modified_bessel_i1 = _C.special_i1


def softmax(input, dim, *, dtype=None):
    return _nn.functional.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    return _nn.functional.log_softmax(input, dim, dtype=dtype)


__all__ = sorted([*_OWN, *_SAME, "modified_bessel_i1", "softmax", "log_softmax"])
