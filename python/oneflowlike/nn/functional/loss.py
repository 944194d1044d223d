"""torch.nn.functional's loss functions: flow kernels where one exists (cross_entropy, nll_loss,
mse_loss), composites of flow ops otherwise, so that autograd, meta and graph mode come free.

Over 600 lines: torch.nn.functional's losses, one module as in PyTorch."""

import math
import warnings

import oneflowlike as flow

from ._ctc import ctc_loss  # noqa: F401 (re-exported: its time loop has a file of its own)
from .activation import logsigmoid
from .distance import pairwise_distance

__all__ = [
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cosine_embedding_loss",
    "cross_entropy",
    "ctc_loss",
    "gaussian_nll_loss",
    "hinge_embedding_loss",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "linear_cross_entropy",
    "margin_ranking_loss",
    "mse_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "multilabel_soft_margin_loss",
    "nll_loss",
    "poisson_nll_loss",
    "smooth_l1_loss",
    "soft_margin_loss",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
]

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(reduction, size_average=None, reduce=None):
    """The reduction string, from torch's legacy size_average / reduce flags when given."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = ("mean" if size_average else "sum") if reduce else "none"
    if reduction not in _REDUCTIONS:
        raise ValueError(
            f"{reduction} is not a valid value for reduction; use one of {_REDUCTIONS}"
        )
    return reduction


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _shape(t):
    return tuple(t.shape)


def _broadcast_shape(name, a, b):
    sa, sb = _shape(a), _shape(b)
    out = []
    for i in range(1, max(len(sa), len(sb)) + 1):
        x = sa[-i] if i <= len(sa) else 1
        y = sb[-i] if i <= len(sb) else 1
        if x != y and 1 not in (x, y):
            raise RuntimeError(
                f"[{name}] input of shape {sa} and target of shape {sb} are not broadcastable "
                f"(dimension {-i}: {x} vs {y})"
            )
        out.append(max(x, y))
    return tuple(reversed(out))


def _expand_pair(name, input, target):
    """torch's rule for the regression losses: warn on different sizes, then broadcast."""
    if _shape(input) == _shape(target):
        return input, target
    shape = _broadcast_shape(name, input, target)
    warnings.warn(
        f"{name}: using a target size ({_shape(target)}) that is different to the input size "
        f"({_shape(input)}). This will likely lead to incorrect results due to broadcasting. "
        "Please ensure they have the same size.",
        stacklevel=3,
    )
    return flow.broadcast_to(input, shape), flow.broadcast_to(target, shape)


def _same_shape(name, input, target, exc=ValueError):
    if _shape(input) != _shape(target):
        raise exc(
            f"[{name}] target size {_shape(target)} must be the same as input size "
            f"{_shape(input)}"
        )


def _weighted(name, loss, weight, reduction):
    """l1 / mse with per-element weights: the mean divides by the weights' sum, as torch."""
    if _shape(weight) != _shape(loss):
        raise ValueError(
            f"[{name}] Weights and input must have the same size: weight {_shape(weight)}, "
            f"input {_shape(loss)}"
        )
    loss = loss * weight
    if reduction == "mean":
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


def _softplus(z):
    return flow.log1p(flow.exp(-flow.abs(z))) + flow.clamp(z, min=0.0)


def _host_checkable(*tensors):
    """Whether values can be read back for argument checks (not meta, traced or global)."""
    return all(
        not (t.device.type == "meta" or t.is_traced or t.is_global)
        for t in tensors
        if isinstance(t, flow.Tensor)
    )


# ---- regression --------------------------------------------------------------------------------


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = _reduction(reduction, size_average, reduce)
    input, target = _expand_pair("l1_loss", input, target)
    loss = flow.abs(input - target)
    if weight is not None:
        return _weighted("l1_loss", loss, weight, reduction)
    return _reduce(loss, reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = _reduction(reduction, size_average, reduce)
    input, target = _expand_pair("mse_loss", input, target)
    if weight is not None:
        return _weighted("mse_loss", flow.square(input - target), weight, reduction)
    return flow._C.mse_loss(input, target, reduction=reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    reduction = _reduction(reduction)
    input, target = _expand_pair("huber_loss", input, target)
    z = flow.abs(input - target)
    loss = flow.where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta))
    if weight is not None:
        if _shape(weight) != _shape(loss):
            raise ValueError(
                f"[huber_loss] Weights and input must have the same size: weight "
                f"{_shape(weight)}, input {_shape(loss)}"
            )
        loss = loss * weight
    return _reduce(loss, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    reduction = _reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError(f"[smooth_l1_loss] does not support negative values for beta ({beta})")
    input, target = _expand_pair("smooth_l1_loss", input, target)
    z = flow.abs(input - target)
    if beta == 0:
        return _reduce(z, reduction)
    return _reduce(flow.where(z < beta, 0.5 * z * z / beta, z - 0.5 * beta), reduction)


def poisson_nll_loss(
    input,
    target,
    log_input=True,
    full=False,
    size_average=None,
    eps=1e-8,
    reduce=None,
    reduction="mean",
):
    reduction = _reduction(reduction, size_average, reduce)
    if log_input:
        loss = flow.exp(input) - target * input
    else:
        loss = input - target * flow.log(input + eps)
    if full:
        # Stirling's term, for targets above 1 only.
        safe = flow.where(target > 1, target, flow.ones_like(target))
        stirling = safe * flow.log(safe) - safe + 0.5 * flow.log(2 * math.pi * safe)
        loss = loss + flow.where(target > 1, stirling, flow.zeros_like(stirling))
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError(f"[gaussian_nll_loss] var has negative entry/entries ({var})")
        var = flow.full_like(input, float(var))
    elif _host_checkable(var) and bool((var < 0).any().item()):
        raise ValueError("[gaussian_nll_loss] var has negative entry/entries")
    shape, vshape = _shape(input), _shape(var)
    if vshape != shape:
        if shape[:-1] == vshape:
            var = var.unsqueeze(-1)
        elif not (
            len(shape) == len(vshape) and sum(v for s, v in zip(shape, vshape) if s != v) == 1
        ):
            raise ValueError(
                f"[gaussian_nll_loss] var is of incorrect size {vshape} for input {shape}"
            )
    reduction = _reduction(reduction)
    # Clamped for stability, with the gradient of the unclamped var (as torch's no_grad clamp_).
    detached = var.detach()
    var = var + (flow.clamp(detached, min=eps) - detached)
    loss = 0.5 * (flow.log(var) + flow.square(input - target) / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    if size_average is not None or reduce is not None:
        reduction = _reduction(reduction, size_average, reduce)
    elif reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.",
            stacklevel=2,
        )
    if log_target:
        loss = flow.exp(target) * (target - input)
    else:
        # xlogy(t, t): 0 where t is 0, with a finite gradient there.
        zero = target == 0
        safe = flow.where(zero, flow.ones_like(target), target)
        loss = flow.where(zero, flow.zeros_like(target), target * flow.log(safe)) - target * input
    if reduction == "batchmean":
        loss = loss.sum()
        return loss / input.shape[0] if input.ndim != 0 else loss
    return _reduce(loss, _reduction(reduction))


# ---- binary and multi-label classification ---------------------------------------------------


def binary_cross_entropy(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
):
    reduction = _reduction(reduction, size_average, reduce)
    _same_shape("binary_cross_entropy", input, target)
    # torch clamps each log at -100 so that a probability of 0 or 1 gives a finite loss.
    log_p = flow.clamp(flow.log(input), min=-100.0)
    log_q = flow.clamp(flow.log(1.0 - input), min=-100.0)
    loss = -(target * log_p + (1.0 - target) * log_q)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None
):
    """Stable form: (1 - y) x + (1 + (w_pos - 1) y) (log(1 + e^-|x|) + max(-x, 0))."""
    reduction = _reduction(reduction, size_average, reduce)
    _same_shape("binary_cross_entropy_with_logits", input, target)
    softplus_neg = _softplus(-input)
    if pos_weight is None:
        loss = (1.0 - target) * input + softplus_neg
    else:
        loss = (1.0 - target) * input + (1.0 + (pos_weight - 1.0) * target) * softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(reduction, size_average, reduce)
    input, target = _expand_pair("soft_margin_loss", input, target)
    return _reduce(_softplus(-input * target), reduction)


def multilabel_soft_margin_loss(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
):
    reduction = _reduction(reduction, size_average, reduce)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.ndim - 1
    return _reduce(loss.sum(class_dim) / input.shape[class_dim], reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over the listed targets j and the other classes i of max(0, 1 - x[j] + x[i]) / C;
    a row's target list ends at its first -1."""
    reduction = _reduction(reduction, size_average, reduce)
    if input.ndim == 0 and target.ndim == 0:  # torch takes a scalar as one class
        input, target = input.reshape(1), target.reshape(1)
    if input.ndim not in (1, 2) or _shape(target) != _shape(input):
        raise RuntimeError(
            f"[multilabel_margin_loss] inconsistent target size: {_shape(target)} for input of "
            f"size: {_shape(input)} (expected a 1-d or 2-d input and a target of its shape)"
        )
    classes = input.shape[-1]
    listed = flow.cumsum((target == -1).to(flow.int64), dim=-1) == 0
    safe = flow.where(listed, target, flow.zeros_like(target))
    onehot = safe.unsqueeze(-1) == flow.arange(classes, device=input.device)
    count = (onehot.logical_and(listed.unsqueeze(-1))).to(input.dtype).sum(-2)
    others = (count == 0).to(input.dtype)
    hinge = flow.relu(1.0 - input.unsqueeze(-1) + input.unsqueeze(-2))
    loss = (hinge * count.unsqueeze(-1) * others.unsqueeze(-2)).sum(-1).sum(-1) / classes
    return _reduce(loss, reduction)


def multi_margin_loss(
    input,
    target,
    p=1,
    margin=1.0,
    weight=None,
    size_average=None,
    reduce=None,
    reduction="mean",
):
    reduction = _reduction(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError(f"[multi_margin_loss] only p == 1 and p == 2 supported, got {p}")
    shape, tshape = _shape(input), _shape(target)
    # A 0-d or 1-d input is one sample; its target has one element and gives the output shape.
    single = input.ndim <= 1 and target.numel() == 1
    if not single and (input.ndim != 2 or tshape != shape[:1]):
        raise RuntimeError(
            f"[multi_margin_loss] target should be 1-D with size equal to the number of input "
            f"samples, got target {tshape} for input {shape}"
        )
    if single:
        input, target = input.reshape(1, -1), target.reshape(1)
    classes = input.shape[-1]
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != classes):
        raise ValueError(
            f"[multi_margin_loss] weight should be a 1-d tensor of {classes} elements, got "
            f"{_shape(weight)}"
        )
    index = target.unsqueeze(-1)
    z = flow.relu(margin - input.gather(-1, index) + input)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.index_select(0, target).unsqueeze(-1)
    own = index == flow.arange(classes).to(input.device)
    loss = flow.where(own, flow.zeros_like(z), z).sum(-1) / classes
    return _reduce(loss.reshape(tshape) if single else loss, reduction)


# ---- embeddings and ranking ------------------------------------------------------------------


def cosine_embedding_loss(
    input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"
):
    reduction = _reduction(reduction, size_average, reduce)
    dim = target.ndim
    if dim > 1 or input1.ndim != dim + 1 or input2.ndim != dim + 1:
        raise RuntimeError(
            f"[cosine_embedding_loss] a {dim}-d target expects {dim + 1}-d inputs (0-d or 1-d "
            f"targets only), got input1 {_shape(input1)}, input2 {_shape(input2)} and target "
            f"{_shape(target)}"
        )
    eps = 1e-12
    dot = (input1 * input2).sum(dim)
    mag1 = (input1 * input1).sum(dim) + eps
    mag2 = (input2 * input2).sum(dim) + eps
    cos = dot / flow.sqrt(mag1 * mag2)
    zero = flow.zeros_like(cos)
    loss = flow.where(target == 1, 1.0 - cos, zero) + flow.where(
        target == -1, flow.clamp(cos - margin, min=0.0), zero
    )
    return _reduce(loss, reduction)


def margin_ranking_loss(
    input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"
):
    reduction = _reduction(reduction, size_average, reduce)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(
            f"[margin_ranking_loss] All input tensors should have same dimension but got sizes: "
            f"input1: {_shape(input1)}, input2: {_shape(input2)}, target: {_shape(target)}"
        )
    return _reduce(flow.clamp(-target * (input1 - input2) + margin, min=0.0), reduction)


def hinge_embedding_loss(
    input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"
):
    reduction = _reduction(reduction, size_average, reduce)
    zero = flow.zeros_like(input)
    loss = flow.where(target != 1, flow.clamp(margin - input, min=0.0), zero) + flow.where(
        target != -1, input, zero
    )
    return _reduce(loss, reduction)


def _check_triplet(name, anchor, positive, negative):
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(
            f"[{name}] The anchor, positive, and negative tensors are expected to have the same "
            f"number of dimensions, but got: anchor {anchor.ndim}D {_shape(anchor)}, positive "
            f"{positive.ndim}D {_shape(positive)}, and negative {negative.ndim}D "
            f"{_shape(negative)} inputs"
        )


def triplet_margin_with_distance_loss(
    anchor,
    positive,
    negative,
    *,
    distance_function=None,
    margin=1.0,
    swap=False,
    reduction="mean",
):
    if margin <= 0:
        raise ValueError(
            f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
            "instead"
        )
    reduction = _reduction(reduction)
    _check_triplet("triplet_margin_with_distance_loss", anchor, positive, negative)
    distance = pairwise_distance if distance_function is None else distance_function
    dist_pos = distance(anchor, positive)
    dist_neg = distance(anchor, negative)
    if swap:
        dist_neg = flow.minimum(dist_neg, distance(positive, negative))
    return _reduce(flow.clamp(margin + dist_pos - dist_neg, min=0.0), reduction)


def triplet_margin_loss(
    anchor,
    positive,
    negative,
    margin=1.0,
    p=2,
    eps=1e-6,
    swap=False,
    size_average=None,
    reduce=None,
    reduction="mean",
):
    reduction = _reduction(reduction, size_average, reduce)
    _check_triplet("triplet_margin_loss", anchor, positive, negative)
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = flow.minimum(dist_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(flow.clamp(margin + dist_pos - dist_neg, min=0.0), reduction)


# ---- class targets -----------------------------------------------------------------------------


def _class_dim(input):
    return 1 if input.ndim >= 2 else 0


def _check_class_target(name, input, target):
    shape, tshape = _shape(input), _shape(target)
    if input.ndim < 1:
        raise RuntimeError(f"[{name}] input must have at least 1 dimension, got {shape}")
    expected = shape[:1] + shape[2:] if input.ndim >= 2 else ()
    if tshape != expected:
        raise RuntimeError(
            f"[{name}] input of shape {shape} expects class targets of shape {expected}, got "
            f"{tshape}"
        )
    if target.is_floating_point() or target.dtype == flow.bool:
        raise TypeError(f"[{name}] class targets must be int64, got {target.dtype}")


def _as_class_target(input, target):
    """OneFlow's spelling: class targets of shape (N, 1) for an input (N, C), as its tutorials
    give them, read as (N,). Other shapes are left for the checks to name."""
    if (
        input.ndim == 2
        and target.ndim == 2
        and target.shape[0] == input.shape[0]
        and target.shape[1] == 1
        and not target.is_floating_point()
        and target.dtype != flow.bool
    ):
        return target.reshape(target.shape[0])
    return target


def _check_class_weight(name, weight, classes):
    if weight.ndim != 1 or weight.shape[0] != classes:
        raise RuntimeError(
            f"[{name}] weight tensor should be defined either for all {classes} classes or no "
            f"classes but got weight tensor of shape: {_shape(weight)}"
        )


def _nll_terms(logp, target, weight, ignore_index):
    """Per-element -w[y] logp[y] and the weights w[y] (0 where the target is ignored)."""
    class_dim = _class_dim(logp)
    valid = target != ignore_index
    safe = flow.where(valid, target, flow.zeros_like(target))
    picked = logp.gather(class_dim, safe.unsqueeze(class_dim)).squeeze(class_dim)
    w = weight.index_select(0, safe.reshape(-1)).reshape(_shape(safe)).to(logp.dtype)
    w = flow.where(valid, w, flow.zeros_like(w))
    return -picked * w, w, valid


def _weighted_mean(loss, w, reduction):
    return loss.sum() / w.sum() if reduction == "mean" else _reduce(loss, reduction)


def nll_loss(
    input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"
):
    reduction = _reduction(reduction, size_average, reduce)
    target = _as_class_target(input, target)
    if weight is None:
        return flow._C.nll_loss(input, target, ignore_index=ignore_index, reduction=reduction)
    _check_class_target("nll_loss", input, target)
    _check_class_weight("nll_loss", weight, input.shape[_class_dim(input)])
    loss, w, _ = _nll_terms(input, target, weight, ignore_index)
    return _weighted_mean(loss, w, reduction)


def cross_entropy(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index=-100,
    reduce=None,
    reduction="mean",
    label_smoothing=0.0,
):
    """Class-index targets (N, d...) or class probabilities of the input's shape; class dim 1.
    For an input (N, C), class targets (N, 1) too (OneFlow's)."""
    reduction = _reduction(reduction, size_average, reduce)
    target = _as_class_target(input, target)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(
            f"[cross_entropy] label_smoothing must be in [0, 1], got {label_smoothing}"
        )
    if weight is None:
        return flow._C.cross_entropy(
            input,
            target,
            ignore_index=ignore_index,
            reduction=reduction,
            label_smoothing=label_smoothing,
        )
    class_dim = _class_dim(input)
    classes = input.shape[class_dim]
    _check_class_weight("cross_entropy", weight, classes)
    logp = flow.log_softmax(input, class_dim)
    weight_shape = [1] * input.ndim
    weight_shape[class_dim] = classes
    weight_b = weight.reshape(weight_shape).to(input.dtype)
    if target.is_floating_point():
        _same_shape("cross_entropy", input, target, RuntimeError)
        if label_smoothing > 0:
            target = target * (1.0 - label_smoothing) + label_smoothing / classes
        loss = -(logp * target * weight_b).sum(class_dim)
        if reduction == "mean":
            return loss.sum() / (input.numel() // classes)
        return _reduce(loss, reduction)
    _check_class_target("cross_entropy", input, target)
    loss, w, valid = _nll_terms(logp, target, weight, ignore_index)
    nll = _weighted_mean(loss, w, reduction)
    if label_smoothing == 0:
        return nll
    # torch's smoothing term: the weighted sum over classes, normalised as the nll part is.
    smooth = -(logp * weight_b).sum(class_dim)
    smooth = flow.where(valid, smooth, flow.zeros_like(smooth))
    smooth = _weighted_mean(smooth, w, reduction)
    return (1.0 - label_smoothing) * nll + smooth * (label_smoothing / classes)


def linear_cross_entropy(
    input,
    linear_weight,
    target,
    *,
    linear_bias=None,
    weight=None,
    reduction="mean",
    ignore_index=None,
    label_smoothing=0.0,
    options=None,
):
    """cross_entropy(linear(input, linear_weight, linear_bias)); linear_weight is (C, *K, in).

    ``options`` (torch's chunking of the batch to save memory) is accepted and not used: the
    logits are formed whole."""
    if input.ndim not in (1, 2):
        raise RuntimeError(
            f"[linear_cross_entropy] expected input with dimensionality 1 or 2, got "
            f"{_shape(input)}"
        )
    if linear_weight.ndim < 2:
        raise RuntimeError(
            f"[linear_cross_entropy] expected linear_weight with dimensionality at least 2, got "
            f"{_shape(linear_weight)}"
        )
    batch, in_features = _shape(input)[:-1], input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(
            f"[linear_cross_entropy] expected equal input and linear_weight last dimensions "
            f"(in_features), got input {_shape(input)} and linear_weight {_shape(linear_weight)}"
        )
    classes, out_features = linear_weight.shape[0], _shape(linear_weight)[1:-1]
    if linear_bias is not None and _shape(linear_bias) != (classes, *out_features):
        raise RuntimeError(
            f"[linear_cross_entropy] expected linear_bias shape {(classes, *out_features)}, got "
            f"{_shape(linear_bias)}"
        )
    if out_features and not batch:
        raise RuntimeError(
            f"[linear_cross_entropy] K-dimensional loss defined by linear_weight shape "
            f"{_shape(linear_weight)} requires batched input, (N, {in_features}), got "
            f"unbatched input with shape {_shape(input)}"
        )
    logits_shape = (*batch, classes, *out_features)
    if _shape(target) == logits_shape and ignore_index is not None:
        raise RuntimeError(
            "[linear_cross_entropy] ignore_index cannot be specified when target contains "
            "probabilities"
        )
    rows = math.prod(out_features, start=classes)
    bias = None if linear_bias is None else linear_bias.reshape(rows)
    logits = flow._C.linear(input, linear_weight.reshape(rows, in_features), bias)
    return cross_entropy(
        logits.reshape(logits_shape),
        target,
        weight=weight,
        reduction=reduction,
        ignore_index=-100 if ignore_index is None else ignore_index,
        label_smoothing=label_smoothing,
    )
