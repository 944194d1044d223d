"""torch.nn.functional's distance functions, composites of elementwise ops and reductions."""

import math

import oneflowlike as flow

__all__ = ["cosine_similarity", "pairwise_distance", "pdist"]


def _vector_norm(x, p, dim, keepdim=False):
    """The p-norm over `dim`; its gradient at a zero vector is zero (as torch.norm's), not nan."""
    p = float(p)
    a = flow.abs(x)
    if p == math.inf:
        return a.amax(dim, keepdim=keepdim)
    if p == -math.inf:
        return a.amin(dim, keepdim=keepdim)
    if p == 0.0:
        return (x != 0).to(x.dtype).sum(dim, keepdim=keepdim)
    if p == 1.0:
        return a.sum(dim, keepdim=keepdim)
    total = (x * x if p == 2.0 else a**p).sum(dim, keepdim=keepdim)
    positive = total > 0
    safe = flow.where(positive, total, flow.ones_like(total))
    root = flow.sqrt(safe) if p == 2.0 else safe ** (1.0 / p)
    return flow.where(positive, root, flow.zeros_like(total))


def _broadcast_shape(a, b, name):
    a, b = tuple(a), tuple(b)
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise RuntimeError(f"[{name}] the shapes {a} and {b} cannot be broadcast together")
        out.append(y if x == 1 else x)
    return tuple(out)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of x1 - x2 + eps over the last dimension."""
    _broadcast_shape(x1.shape, x2.shape, "pairwise_distance")
    last = max(x1.dim(), x2.dim()) - 1
    if last < 0:
        return flow.abs(x1 - x2 + eps)
    return _vector_norm(x1 - x2 + eps, p, last, keepdim)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 / max(|x1|, eps) * x2 / max(|x2|, eps)) over `dim`, after broadcasting."""
    shape = _broadcast_shape(x1.shape, x2.shape, "cosine_similarity")
    if not -len(shape) <= dim < max(len(shape), 1):
        raise IndexError(
            f"[cosine_similarity] dim {dim} is out of range for the broadcast shape {shape}"
        )
    x1, x2 = x1.expand(tuple(shape)), x2.expand(tuple(shape))
    n1 = flow.clamp(_vector_norm(x1, 2, dim, keepdim=True), min=eps)
    n2 = flow.clamp(_vector_norm(x2, 2, dim, keepdim=True), min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pdist(input, p=2):
    """The p-norm distances between the rows of a 2-d input: the upper triangle, row by row."""
    if input.dim() != 2:
        raise RuntimeError(
            f"pdist only supports 2D tensors, got: {input.dim()}D (shape {tuple(input.shape)})"
        )
    if p < 0:
        raise RuntimeError(f"pdist only supports non-negative p values, got {p}")
    n = input.shape[0]
    rows = [i for i in range(n) for _ in range(i + 1, n)]
    cols = [j for i in range(n) for j in range(i + 1, n)]
    if not rows:  # no pair: empty, still connected to input for autograd (as PyTorch's)
        return input.reshape(-1)[:0] * 0
    index = lambda v: flow.tensor(v, dtype=flow.int64, device=input.device)  # noqa: E731
    diff = input.index_select(0, index(rows)) - input.index_select(0, index(cols))
    return _vector_norm(diff, p, 1)
