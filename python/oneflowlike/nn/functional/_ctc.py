"""torch.nn.functional.ctc_loss: the CTC forward variable as a loop over time of flow ops."""

import math

import oneflowlike as flow

__all__ = ["ctc_loss"]


def _shape(t):
    return tuple(t.shape)


def _readable(t):
    """Whether values can be read back for argument checks (not meta, traced or global)."""
    return not (t.device.type == "meta" or t.is_traced or t.is_global)


# Stands for log(0) in the forward variable: finite, so that logsumexp and its gradient stay
# finite where a path is impossible (a loss that reaches it is infinite).
_CTC_NEG = -1e30


def _ctc_lengths(name, lengths, batch, device):
    if isinstance(lengths, flow.Tensor):
        tensor = lengths.reshape(-1).to(flow.int64)
    else:
        values = list(lengths) if isinstance(lengths, (list, tuple)) else [int(lengths)]
        tensor = flow.tensor(values, dtype=flow.int64).to(device)
    if tensor.shape[0] != batch:
        raise RuntimeError(f"[ctc_loss] {name} must have {batch} entries, got {_shape(tensor)}")
    return tensor, (tensor.tolist() if _readable(tensor) else None)


def _ctc_padded_targets(targets, tg_len, tg_host, batched, blank):
    """Targets as (N, S) int64 with every entry past a row's length set to the blank."""
    if not batched:
        targets = targets.reshape(1, -1)
    elif targets.ndim == 1:  # concatenated targets, split by their lengths
        if tg_host is None:
            raise NotImplementedError("[ctc_loss] concatenated targets need readable lengths")
        if sum(tg_host) > targets.shape[0]:
            raise RuntimeError(
                f"[ctc_loss] target_lengths {tg_host} sum to more than the {targets.shape[0]} "
                "concatenated targets"
            )
        width, rows, offset = max(tg_host + [0]), [], 0
        for length in tg_host:
            pad = flow.full((width - length,), blank, dtype=targets.dtype).to(targets.device)
            rows.append(flow.cat([targets.narrow(0, offset, length), pad]))
            offset += length
        targets = flow.stack(rows)
    targets = targets.to(flow.int64)
    width = targets.shape[1]
    if tg_host is not None and max(tg_host + [0]) > width:
        raise RuntimeError(
            f"[ctc_loss] Expected tensor to have size at least {max(tg_host)} at dimension 1, "
            f"but got size {width} (targets {_shape(targets)})"
        )
    inside = flow.arange(width).to(targets.device).unsqueeze(0) < tg_len.unsqueeze(1)
    return flow.where(inside, targets, flow.full_like(targets, blank))


def ctc_loss(
    log_probs,
    targets,
    input_lengths,
    target_lengths,
    blank=0,
    reduction="mean",
    zero_infinity=False,
):
    """The CTC forward variable alpha over the blank-extended target, a loop over time in log
    space; autograd gives the gradient (torch's hand-written one adds exp(log_probs), which
    vanishes behind log_softmax)."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"[ctc_loss] {reduction} is not a valid value for reduction")
    if log_probs.ndim not in (2, 3):
        raise RuntimeError(
            f"[ctc_loss] log_probs must be (T, N, C) or (T, C), got {_shape(log_probs)}"
        )
    batched = log_probs.ndim == 3
    if not batched:
        log_probs = log_probs.unsqueeze(1)
    steps, batch, classes = _shape(log_probs)
    if not 0 <= blank < classes:
        raise RuntimeError(f"[ctc_loss] blank {blank} must be in label range [0, {classes})")
    device = log_probs.device
    in_len, in_host = _ctc_lengths("input_lengths", input_lengths, batch, device)
    tg_len, tg_host = _ctc_lengths("target_lengths", target_lengths, batch, device)
    if in_host is not None and max(in_host) > steps:
        raise RuntimeError(
            f"[ctc_loss] Expected input_lengths to have value at most {steps}, but got value "
            f"{max(in_host)} (log_probs {_shape(log_probs)})"
        )
    targets = _ctc_padded_targets(targets, tg_len, tg_host, batched, blank)
    width = 2 * targets.shape[1] + 1
    blanks = flow.full_like(targets, blank)
    ext = flow.cat([flow.stack([blanks, targets], dim=2).reshape(batch, -1), blanks[:, :1]], 1)
    if targets.shape[1] == 0:
        ext = flow.full((batch, 1), blank, dtype=flow.int64).to(device)
    lp = log_probs.gather(2, ext.unsqueeze(0).expand(steps, batch, width).contiguous())
    # A label may follow the one two places back unless it is a blank or a repeat.
    before2 = flow.cat([flow.full_like(ext, -1)[:, :2], ext], 1).narrow(1, 0, width)
    skip = (ext != blank).logical_and(ext != before2)
    pos = flow.arange(width).to(device).unsqueeze(0)
    start = (pos == 0).logical_or((pos == 1).logical_and(tg_len.unsqueeze(1) > 0))
    alpha = flow.where(start, lp[0], _CTC_NEG)
    neg = flow.full_like(alpha, _CTC_NEG)[:, :2]
    for t in range(1, steps):
        prev1 = flow.cat([neg[:, :1], alpha], 1).narrow(1, 0, width)
        prev2 = flow.where(skip, flow.cat([neg, alpha], 1).narrow(1, 0, width), _CTC_NEG)
        new = flow.logsumexp(flow.stack([alpha, prev1, prev2]), 0) + lp[t]
        alpha = flow.where((in_len > t).unsqueeze(1), new, alpha)
    last = (2 * tg_len).unsqueeze(1)
    a_last = alpha.gather(1, last).squeeze(1)
    a_prev = alpha.gather(1, flow.clamp(last - 1, min=0)).squeeze(1)
    a_prev = flow.where(tg_len > 0, a_prev, _CTC_NEG)
    log_likelihood = flow.logaddexp(a_last, a_prev)
    impossible = log_likelihood < _CTC_NEG / 2
    nll = flow.where(impossible, 0.0 if zero_infinity else math.inf, -log_likelihood)
    if reduction == "mean":
        return (nll / flow.clamp(tg_len, min=1).to(nll.dtype)).mean()
    if reduction == "sum":
        return nll.sum()
    return nll if batched else nll.squeeze(0)
