"""torch.nn.functional's dropout family.

The masks are drawn with rand_like, so a global input gets the same logical mask whatever its
layout. Feature dropouts draw one value per (sample, channel), from a narrowed view of the input
so that the mask carries the input's placement."""

import warnings

import oneflowlike as flow

__all__ = [
    "alpha_dropout",
    "dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "feature_alpha_dropout",
]

_SELU_ALPHA = 1.7580993408473766  # -scale * alpha of SELU: the value dropped units take


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _apply(input, noise, shift, inplace):
    if inplace:
        input.mul_(noise)
        return input if shift is None else input.add_(shift)
    out = input * noise
    return out if shift is None else out + shift


def _zeros(input, inplace):
    return _apply(input, flow.zeros_like(input), None, inplace)


def _feature_uniform(input, batched):
    """Uniform draws of shape (N, C, 1, ..., 1), one per sample and channel ((C, 1, ..., 1)
    for an input without its batch dimension)."""
    if input.dim() < 2:
        raise RuntimeError(
            f"Feature dropout requires at least 2 dimensions in the input, got "
            f"{tuple(input.shape)}"
        )
    view = input.detach() if batched else input.detach().unsqueeze(0)
    for d in range(2, view.dim()):
        view = view.narrow(d, 0, 1)
    uniform = flow.rand_like(view)
    return uniform if batched else uniform.squeeze(0)


def _dropout_impl(input, p, training, inplace, feature, alpha, batched=True):
    _check_p(p)
    if p == 0.0 or not training or input.numel() == 0:
        return input
    if p == 1.0:
        return _zeros(input, inplace)
    if feature:
        uniform = _feature_uniform(input, batched)
    else:
        uniform = flow.rand_like(input.detach())
    keep = (uniform < 1.0 - p).to(input.dtype)
    if not alpha:
        return _apply(input, keep / (1.0 - p), None, inplace)
    a = 1.0 / ((_SELU_ALPHA**2 * p + 1.0) * (1.0 - p)) ** 0.5
    shift = (keep - 1.0) * (_SELU_ALPHA * a) + _SELU_ALPHA * a * p
    return _apply(input, keep * a, shift, inplace)


def dropout(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    if not training or p == 0.0:
        return input
    if inplace:
        return _dropout_impl(input, p, training, True, False, False)
    return flow._C.dropout(input, p=p, training=training)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _dropout_impl(input, p, training, inplace, False, True)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _dropout_impl(input, p, training, inplace, True, True)


def _feature_dropout(input, batched_dims, p, training, inplace):
    batched = input.dim() == batched_dims
    return _dropout_impl(input, p, training, inplace, True, False, batched)


def dropout1d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"[dropout1d] Expected 2D or 3D input, but received a {input.dim()}D input "
            f"{tuple(input.shape)}. Note that dropout1d exists to provide channel-wise dropout on "
            f"inputs with 1 spatial dimension, a channel dimension, and an optional batch "
            f"dimension (i.e. 2D or 3D inputs)."
        )
    return _feature_dropout(input, 3, p, training, inplace)


def dropout2d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    if input.dim() not in (3, 4):
        warnings.warn(
            f"[dropout2d] Received a {input.dim()}-D input to dropout2d, which is deprecated and "
            f"will result in an error in a future release. To retain the behavior and silence "
            f"this warning, please use dropout instead. Note that dropout2d exists to provide "
            f"channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, and "
            f"an optional batch dimension (i.e. 3D or 4D inputs)."
        )
    if input.dim() == 3:
        warnings.warn(
            "[dropout2d] Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead."
        )
    return _dropout_impl(input, p, training, inplace, True, False)


def dropout3d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    if input.dim() not in (4, 5):
        warnings.warn(
            f"[dropout3d] Received a {input.dim()}-D input to dropout3d, which is deprecated and "
            f"will result in an error in a future release. To retain the behavior and silence "
            f"this warning, please use dropout instead. Note that dropout3d exists to provide "
            f"channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, and "
            f"an optional batch dimension (i.e. 4D or 5D inputs)."
        )
    if input.dim() == 4:
        return _feature_dropout(input, 5, p, training, inplace)
    return _dropout_impl(input, p, training, inplace, True, False)
