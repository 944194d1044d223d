"""torch.Tensor's in-place variants (`x.acos_()`, `x.clamp_min_(0)`, `x.eq_(y)`, ...) for the
ops that have no in-place row of their own: the op out of place, then `copy_` into self. copy_
carries the in-place semantics: the version counter, autograd's rebased history, and the refusal
of a leaf that requires grad. Installed only where the registry binds no such method."""

from . import _C

# Out-of-place ops whose torch in-place form keeps self's shape (view-changing ones such as
# t_ / squeeze_ / transpose_ reshape self in place and are not of this kind).
_NAMES = (
    "abs absolute acos acosh addbmm addmm addmv addr arccos arccosh arcsin arcsinh arctan arctan2 "
    "arctanh asin asinh atan atan2 atanh baddbmm bitwise_and bitwise_left_shift bitwise_not "
    "bitwise_or bitwise_right_shift bitwise_xor ceil clamp_max clamp_min conj_physical copysign "
    "cos cosh cumsum cumprod deg2rad digamma divide eq erf erfc erfinv exp exp2 expm1 fix "
    "float_power floor floor_divide fmod frac gcd ge gt heaviside hypot i0 igamma igammac "
    "index_add index_fill lcm ldexp le lerp lgamma log log10 log1p log2 logical_and logical_not "
    "logical_or logical_xor logit lt multiply mvlgamma nan_to_num ne neg negative nextafter "
    "polygamma pow rad2deg reciprocal relu remainder renorm round rsqrt scatter_add sgn sigmoid "
    "sign sin sinc sinh sqrt square subtract tan tanh tril triu true_divide trunc xlogy"
).split()


def _is_floating(dtype):
    return dtype in (_C.dtype.float16, _C.dtype.bfloat16, _C.dtype.float32, _C.dtype.float64)


def _make(name, out_of_place):
    def inplace(self, *args, **kwargs):
        # The op may save its input for backward: under autograd it reads a clone, which the
        # copy_ below leaves intact.
        source = self.clone() if self.requires_grad and _C.is_grad_enabled() else self
        result = out_of_place(source, *args, **kwargs)
        if tuple(result.shape) != tuple(self.shape):
            raise RuntimeError(
                f"[{name}_] the result has shape {tuple(result.shape)}, which cannot be written "
                f"into self of shape {tuple(self.shape)}"
            )
        if _is_floating(result.dtype) and not _is_floating(self.dtype):
            raise RuntimeError(
                f"[{name}_] result type {result.dtype} can't be cast to the desired output type "
                f"{self.dtype}"
            )
        return self.copy_(result)

    inplace.__name__ = f"{name}_"
    inplace.__doc__ = f"In place: self.copy_(self.{name}(...)). See {name}."
    return inplace


# The view-changing forms: self becomes the view (same storage, new shape and strides).
_VIEW_NAMES = ("squeeze", "unsqueeze", "transpose", "t", "swapaxes", "swapdims")


def _make_view(name, view):
    def inplace(self, *args, **kwargs):
        if self.requires_grad and _C.is_grad_enabled():
            raise RuntimeError(
                f"[{name}_] changing the shape of a tensor that requires grad in place is not "
                f"supported; use {name}() (got shape {tuple(self.shape)})"
            )
        self.data = view(self, *args, **kwargs)
        return self

    inplace.__name__ = f"{name}_"
    inplace.__doc__ = f"In place: self becomes self.{name}(...), a view of the same storage."
    return inplace


def _with_rounding_mode(div_, div_inplace):
    def inplace(self, other, *, rounding_mode=None):
        if rounding_mode is None:
            return div_(self, other)
        return div_inplace(self, other, rounding_mode=rounding_mode)

    inplace.__name__ = "div_"
    inplace.__doc__ = div_.__doc__
    return inplace


def install(tensor_type):
    for name in _NAMES:
        if hasattr(tensor_type, f"{name}_"):
            continue
        method = getattr(tensor_type, name, None)
        if method is not None:
            setattr(tensor_type, f"{name}_", _make(name, method))
    for name in _VIEW_NAMES:
        if not hasattr(tensor_type, f"{name}_") and hasattr(tensor_type, name):
            setattr(tensor_type, f"{name}_", _make_view(name, getattr(tensor_type, name)))
    # div_ with a rounding mode (torch's x.div_(y, rounding_mode="floor")).
    tensor_type.div_ = _with_rounding_mode(tensor_type.div_, _make("div", tensor_type.div))
