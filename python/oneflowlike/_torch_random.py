"""torch's sampling functions that are transforms of uniform or normal draws: bernoulli, normal
(all four overloads) and Tensor.bernoulli / bernoulli_ / cauchy_ / exponential_ / geometric_ /
log_normal_. The draws come from the registry's rand_like / randn (Philox, so the same logical
tensor on any layout); they do not reproduce PyTorch's random streams."""

import math

import oneflowlike as flow

from . import _C

__all__ = ["bernoulli", "normal"]

_Tensor = _C.Tensor
_FLOATS = (_C.dtype.float16, _C.dtype.bfloat16, _C.dtype.float32, _C.dtype.float64)


def _uniform(self, generator):
    """Draws in [0, 1) shaped like self, in self's dtype when floating (else float64)."""
    dtype = self.dtype if self.dtype in _FLOATS else _C.dtype.float64
    return flow.rand_like(self.detach(), generator=generator, dtype=dtype)


def _fill(self, sample):
    """self overwritten with sample, in place (copy_ refuses a leaf that requires grad)."""
    return self.copy_(sample.to(self.dtype))


def _check(name, ok, what):
    if not ok:
        raise RuntimeError(f"[{name}] expects {what}")


def _probabilities(name, p):
    if isinstance(p, _Tensor):
        if p.device.type != "meta" and not p.is_traced and p.numel():
            _check(name, bool(((p >= 0) & (p <= 1)).all()), "all probabilities p in [0, 1]")
    else:
        _check(name, 0 <= p <= 1, f"p to be in [0, 1], but got p={p}")
    return p


def bernoulli(input, p=None, *, generator=None, out=None):
    """1 with probability p (default: input's elements), else 0, in input's dtype."""
    if out is not None:
        raise NotImplementedError("[bernoulli] out= is not supported; use the returned tensor")
    p = _probabilities("bernoulli", input.detach() if p is None else p)
    return (_uniform(input, generator) < p).to(input.dtype)


def _bernoulli_(self, p=0.5, *, generator=None):
    p = _probabilities("bernoulli_", p)
    return _fill(self, _uniform(self, generator) < p)


def _cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Draws from the Cauchy distribution: median + sigma * tan(pi * (u - 1/2))."""
    _check("cauchy_", sigma > 0, f"sigma > 0.0, but found sigma={sigma}")
    u = _uniform(self, generator)
    return _fill(self, median + sigma * flow.tan(math.pi * (u - 0.5)))


def _exponential_(self, lambd=1.0, *, generator=None):
    """Draws from the exponential distribution of rate lambd: -log(1 - u) / lambd."""
    _check("exponential_", lambd > 0, f"lambda > 0.0, but found lambda={lambd}")
    return _fill(self, -flow.log1p(-_uniform(self, generator)) / lambd)


def _geometric_(self, p, *, generator=None):
    """The number of Bernoulli(p) trials up to the first success (1, 2, ...)."""
    _check("geometric_", 0 < p < 1, f"p to be in (0, 1), got p={p}")
    u = 1.0 - _uniform(self, generator)  # in (0, 1]
    return _fill(self, flow.ceil(flow.log(u) / math.log1p(-p)).clamp_min(1.0))


def _log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """exp of normal draws of the given mean and standard deviation."""
    _check("log_normal_", std > 0, f"std > 0.0, but found std={std}")
    eps = flow.randn_like(self.detach(), generator=generator)
    return _fill(self, flow.exp(mean + std * eps))


def _check_std(std):
    if isinstance(std, _Tensor):
        if std.device.type != "meta" and not std.is_traced and std.numel():
            low = std.min().item()
            _check("normal", low >= 0, f"std >= 0.0, but found std {low}")
    else:
        _check("normal", std >= 0, f"std >= 0.0, but found std {std}")


def normal(
    mean,
    std=1.0,
    size=None,
    *,
    generator=None,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=False,
    requires_grad=False,
):
    """Normal draws: mean + std * N(0, 1), with mean and std tensors (broadcast together) or
    numbers (then `size` gives the shape). Gradients flow to tensor mean and std."""
    if out is not None:
        raise NotImplementedError("[normal] out= is not supported; use the returned tensor")
    _check_std(std)
    tensors = [t for t in (mean, std) if isinstance(t, _Tensor)]
    if not tensors:
        if size is None:
            raise TypeError("[normal] with number mean and std, size= must be given")
        eps = flow.randn(tuple(size), generator=generator, dtype=dtype, device=device)
        result = eps * std + mean
        return result.requires_grad_(True) if requires_grad else result
    if size is not None:
        raise TypeError("[normal] size= is only for number mean and std")
    shape = flow.broadcast_shapes(*(tuple(t.shape) for t in tensors))
    ref = tensors[0]
    eps = flow.randn(tuple(shape), generator=generator, dtype=ref.dtype, device=ref.device)
    return mean + std * eps


def _install(tensor_type):
    methods = {
        "bernoulli": bernoulli,
        "bernoulli_": _bernoulli_,
        "cauchy_": _cauchy_,
        "exponential_": _exponential_,
        "geometric_": _geometric_,
        "log_normal_": _log_normal_,
    }
    for name, fn in methods.items():
        if not hasattr(tensor_type, name):
            setattr(tensor_type, name, fn)


_install(_Tensor)
