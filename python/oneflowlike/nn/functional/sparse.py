"""torch.nn.functional's embedding and embedding_bag.

embedding_bag is a composite: sum and mean bags accumulate rows with index_add by bag id; max
bags gather each bag into a padded (bags, longest bag) block and reduce it."""

import oneflowlike as flow

__all__ = ["embedding", "embedding_bag"]

_BAG_MODES = ("sum", "mean", "max")


def _padding_index(padding_idx, num, name):
    if padding_idx is None:
        return None
    if not -num <= padding_idx < num:
        raise ValueError(f"[{name}] padding_idx {padding_idx} must be within num_embeddings {num}")
    return padding_idx + num if padding_idx < 0 else padding_idx


def _check_indices(input, name):
    if input.dtype not in (flow.int64, flow.int32):
        raise TypeError(
            f"[{name}] expected indices of type int64 or int32, got {input.dtype} "
            f"(shape {tuple(input.shape)})"
        )


def _renorm_(weight, input, max_norm, norm_type):
    """Rescales, in place and outside autograd, the looked-up rows whose norm exceeds max_norm."""
    with flow.no_grad():
        index = input.reshape(-1).to(flow.int64)
        if index.numel() == 0:
            return
        rows = weight.detach().index_select(0, index)
        if norm_type == 2:
            norms = (rows * rows).sum(1, keepdim=True).sqrt()
        else:
            norms = (flow.abs(rows) ** norm_type).sum(1, keepdim=True) ** (1.0 / norm_type)
        scale = flow.where(norms > max_norm, max_norm / (norms + 1e-7), flow.ones_like(norms))
        weight.index_copy_(0, index, rows * scale)


def _scale_grad_by_freq(rows, input, num):
    """The rows unchanged, whose gradients are divided by how often their index occurs."""
    flat = input.reshape(-1).to(flow.int64)
    counts = flow.zeros(num, dtype=rows.dtype, device=rows.device).index_add(
        0, flat, flow.ones(flat.numel(), dtype=rows.dtype, device=rows.device)
    )
    freq = counts.index_select(0, flat).reshape(*input.shape, 1)
    scaled = rows / freq
    return scaled + (rows - scaled).detach()


def embedding(
    input,
    weight,
    padding_idx=None,
    max_norm=None,
    norm_type=2.0,
    scale_grad_by_freq=False,
    sparse=False,
):
    if sparse:
        raise NotImplementedError("[embedding] sparse gradients (sparse=True) are not supported")
    if weight.dim() != 2:
        raise RuntimeError(f"[embedding] weight must be 2-D, got {tuple(weight.shape)}")
    padding_idx = _padding_index(padding_idx, weight.shape[0], "embedding")
    if max_norm is not None or scale_grad_by_freq:
        _check_indices(input, "embedding")
    if max_norm is not None:
        _renorm_(weight, input, max_norm, norm_type)
    out = flow._C.embedding(input, weight, padding_idx=padding_idx)
    if scale_grad_by_freq:
        out = _scale_grad_by_freq(out, input, weight.shape[0])
    return out


def _bags(input, offsets, include_last_offset):
    """(flat indices, bag id per index, number of bags)."""
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(
                f"[embedding_bag] if input is 2D, then offsets has to be None, as input is treated "
                f"is a mini-batch of fixed length sequences. However, found offsets of type "
                f"{type(offsets).__name__}"
            )
        bags, length = tuple(input.shape)
        ids = flow.arange(bags, dtype=flow.int64, device=input.device).repeat_interleave(length)
        return input.reshape(-1), ids, bags
    if input.dim() != 1:
        raise ValueError(
            f"[embedding_bag] input has to be 1D or 2D Tensor, but got Tensor of dimension "
            f"{input.dim()} (shape {tuple(input.shape)})"
        )
    if offsets is None:
        raise ValueError("[embedding_bag] offsets has to be a 1D Tensor but got None")
    if offsets.dim() != 1:
        raise ValueError(
            f"[embedding_bag] offsets has to be a 1D Tensor, got shape {tuple(offsets.shape)}"
        )
    _check_indices(offsets, "embedding_bag")
    if offsets.shape[0] and int(offsets[0].item()) != 0:
        raise RuntimeError(
            f"[embedding_bag] offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
            f"has to start from position 0. However, got {int(offsets[0].item())}"
        )
    n = input.shape[0]
    bags = offsets.shape[0] - (1 if include_last_offset else 0)
    offsets = offsets.to(flow.int64)
    # A start mark per offset (repeated offsets: empty bags), summed up to each index.
    starts = flow.zeros(n + 1, dtype=flow.int64, device=input.device).index_add(
        0, flow.clamp(offsets, 0, n), flow.ones(offsets.shape[0], dtype=flow.int64)
    )
    ids = flow.cumsum(starts.narrow(0, 0, n), 0) - 1
    return input, ids, bags


def _bag_max(rows, ids, valid, bags):
    """Per bag, the elementwise max of its valid rows (zeros for an empty bag)."""
    d = rows.shape[1]
    ids_host = ids.tolist()
    valid_host = valid.tolist()
    members = [[] for _ in range(bags)]
    for i, (b, ok) in enumerate(zip(ids_host, valid_host)):
        if ok and 0 <= b < bags:
            members[b].append(i)
    longest = max((len(m) for m in members), default=0)
    if longest == 0:
        return rows.new_zeros(bags, d)
    index = [m + [0] * (longest - len(m)) for m in members]
    mask = [[j < len(m) for j in range(longest)] for m in members]
    index = flow.tensor(index, dtype=flow.int64, device=rows.device).reshape(-1)
    mask = flow.tensor(mask, device=rows.device).reshape(bags, longest, 1)
    block = rows.index_select(0, index).reshape(bags, longest, d)
    lowest = flow.full_like(block, float("-inf"))
    best = flow.where(mask, block, lowest).amax(1)
    nonempty = mask.any(1)
    return flow.where(nonempty, best, flow.zeros_like(best))


def embedding_bag(
    input,
    weight,
    offsets=None,
    max_norm=None,
    norm_type=2,
    scale_grad_by_freq=False,
    mode="mean",
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=None,
):
    """Sums, averages or takes the max of the embeddings of each bag of indices: the rows of a
    2-d input, or the segments of a 1-d input that start at `offsets`."""
    if mode not in _BAG_MODES:
        raise ValueError(f"[embedding_bag] mode has to be one of sum, mean or max, got {mode!r}")
    if sparse:
        raise NotImplementedError(
            "[embedding_bag] sparse gradients (sparse=True) are not supported"
        )
    if weight.dim() != 2:
        raise RuntimeError(f"[embedding_bag] weight must be 2-D, got {tuple(weight.shape)}")
    _check_indices(input, "embedding_bag")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(
                f"[embedding_bag] per_sample_weights was not None. per_sample_weights is only "
                f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                f"GitHub."
            )
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(
                f"[embedding_bag] per_sample_weights {tuple(per_sample_weights.shape)} must have "
                f"the shape of input {tuple(input.shape)}"
            )
    num, d = tuple(weight.shape)
    padding_idx = _padding_index(padding_idx, num, "embedding_bag")
    flat, ids, bags = _bags(input, offsets, include_last_offset)
    flat = flat.to(flow.int64)
    if max_norm is not None:
        _renorm_(weight, flat, max_norm, norm_type)
    rows = flow._C.embedding(flat, weight, padding_idx=padding_idx)
    if scale_grad_by_freq:
        rows = _scale_grad_by_freq(rows, flat, num)
    if padding_idx is None:
        valid = flow.ones(flat.shape[0], dtype=flow.bool, device=flat.device)
    else:
        valid = flat != padding_idx
    if mode == "max":
        return _bag_max(rows, ids, valid, bags)
    weights = valid.to(rows.dtype)
    if per_sample_weights is not None:
        weights = weights * per_sample_weights.reshape(-1).to(rows.dtype)
    # One spare bag takes the indices past the last offset when include_last_offset is set.
    ids = flow.clamp(ids, 0, bags)
    out = flow.zeros(bags + 1, d, dtype=rows.dtype, device=rows.device)
    out = out.index_add(0, ids, rows * weights.unsqueeze(1)).narrow(0, 0, bags)
    if mode == "mean":
        counts = flow.zeros(bags + 1, dtype=rows.dtype, device=rows.device)
        counts = counts.index_add(0, ids, valid.to(rows.dtype)).narrow(0, 0, bags)
        out = out / flow.clamp(counts, min=1.0).unsqueeze(1)
    return out
