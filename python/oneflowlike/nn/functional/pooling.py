"""torch.nn.functional's pooling: max, avg, LP, adaptive, fractional pools and max_unpool, in 1,
2 and 3 spatial dimensions. The common cases run the 2-d pooling kernels (a 1-d pool as 2-d with
a unit height, a 3-d pool as a 2-d pool then a depth pool); dilation, indices of 3-d pools,
adaptive and fractional windows gather the windows with index_select / gather and reduce them.

Over 600 lines: every pool of every dimension shares the window gathering."""

import math

import oneflowlike as flow

from .padding import _index, _ntuple

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d",
    "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "max_pool1d",
    "max_pool1d_with_indices",
    "max_pool2d",
    "max_pool2d_with_indices",
    "max_pool3d",
    "max_pool3d_with_indices",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
]

_NEG_INF = float("-inf")


# ---- argument checks -----------------------------------------------------------------------


def _batched(fn, input, nd):
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"[{fn}] expected {nd + 1}D or {nd + 2}D (batch mode) input, but got input of size "
            f"{list(input.shape)}"
        )
    return (input, True) if input.ndim == nd + 2 else (input.unsqueeze(0), False)


def _window_args(fn, nd, kernel_size, stride, padding, dilation=1):
    kernel = _ntuple(kernel_size, nd, "kernel_size", fn)
    if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0):
        stride = kernel
    stride = _ntuple(stride, nd, "stride", fn)
    padding = _ntuple(padding, nd, "padding", fn)
    dilation = _ntuple(dilation, nd, "dilation", fn)
    if any(k < 1 for k in kernel):
        raise RuntimeError(f"[{fn}] kernel_size must be greater than zero, got {kernel}")
    if any(s < 1 for s in stride):
        raise RuntimeError(f"[{fn}] stride must be greater than zero, got {stride}")
    if any(d < 1 for d in dilation):
        raise RuntimeError(f"[{fn}] dilation must be greater than zero, got {dilation}")
    for p, k, d in zip(padding, kernel, dilation):
        if p < 0 or p > ((k - 1) * d + 1) // 2:
            raise RuntimeError(
                f"[{fn}] pad should be non-negative and at most half of effective kernel size, "
                f"but got pad={padding}, kernel_size={kernel} and dilation={dilation}"
            )
    return kernel, stride, padding, dilation


def _out_sizes(fn, shape, kernel, stride, padding, dilation, ceil_mode):
    spatial = shape[-len(kernel) :]
    out = []
    for size, k, s, p, d in zip(spatial, kernel, stride, padding, dilation):
        o = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (o - 1) * s >= size + p:
            o -= 1  # the last window must start inside the input or its left padding
        out.append(o)
    if any(o < 1 for o in out):
        raise RuntimeError(
            f"[{fn}] given input size {tuple(shape)}, the calculated output size {tuple(out)} is "
            f"too small"
        )
    return out


def _right_extras(spatial, out, kernel, stride, padding, dilation=None):
    """How far the last windows (ceil_mode) reach past the padded input."""
    dilation = dilation or (1,) * len(kernel)
    return [
        max(0, (o - 1) * s + (k - 1) * d + 1 - size - 2 * p)
        for size, o, k, s, p, d in zip(spatial, out, kernel, stride, padding, dilation)
    ]


def _pad_right(x, extras, value):
    if not any(extras):
        return x
    amounts = []
    for e in reversed(extras):
        amounts += [0, e]
    return flow._C.pad(x, amounts, "constant", value)


# ---- the kernels, separably ----------------------------------------------------------------


def _separable(x, nd, kernel, stride, padding, pool2d):
    """A pool of batched x through the 2-d kernel `pool2d(x4, k, s, p)`: 1-d with unit height,
    3-d as a (H, W) pool of each depth slice and then a depth pool (max and sum separate)."""
    if nd == 1:
        return pool2d(x.unsqueeze(2), (1, kernel[0]), (1, stride[0]), (0, padding[0])).squeeze(2)
    if nd == 2:
        return pool2d(x, kernel, stride, padding)
    n, c, d = x.shape[0], x.shape[1], x.shape[2]
    y = pool2d(x.reshape(n, c * d, x.shape[3], x.shape[4]), kernel[1:], stride[1:], padding[1:])
    oh, ow = y.shape[2], y.shape[3]
    y = pool2d(y.reshape(n, c, d, oh * ow), (kernel[0], 1), (stride[0], 1), (padding[0], 0))
    return y.reshape(n, c, y.shape[2], oh, ow)


def _kernel_max(x, k, s, p):
    return flow._C.max_pool2d(x, list(k), list(s), list(p))


def _kernel_mean(x, k, s, p):
    return flow._C.avg_pool2d(x, list(k), list(s), list(p), count_include_pad=True)


# ---- gathered windows ----------------------------------------------------------------------


def _gather_max(x, tables):
    """Max over static windows: tables[i][o] lists the input positions (negative or past the
    end for padding) of output o's taps along spatial dim i. Returns values and flat indices."""
    nd = len(tables)
    spatial = list(x.shape[2:])
    lefts = [max(0, -min(min(t) for t in table)) for table in tables]
    rights = [max(0, max(max(t) for t in table) - size + 1) for table, size in zip(tables, spatial)]
    amounts = []
    for left, right in zip(reversed(lefts), reversed(rights)):
        amounts += [left, right]
    if any(amounts):
        x = flow._C.pad(x, amounts, "constant", _NEG_INF)
    outs, taps = [len(t) for t in tables], [len(t[0]) for t in tables]
    for i, table in enumerate(tables):
        flat = [pos + lefts[i] for window in table for pos in window]
        x = x.index_select(2 + i, _index(flat, x.device))
    n, c = x.shape[0], x.shape[1]
    x = x.reshape([n, c] + [v for pair in zip(outs, taps) for v in pair])
    x = x.permute([0, 1] + [2 + 2 * i for i in range(nd)] + [3 + 2 * i for i in range(nd)])
    values, arg = x.reshape([n, c] + outs + [math.prod(taps)]).max(-1)
    return values, _flat_indices(arg, tables, spatial)


def _flat_indices(arg, tables, spatial):
    """The flat input index (within a plane) of each window's tap number `arg`."""
    nd = len(tables)
    taps = [len(t[0]) for t in tables]
    flat, rem = None, arg
    for i in reversed(range(nd)):
        j, rem = rem % taps[i], rem // taps[i]
        shape = [1] * nd
        shape[i] = len(tables[i])
        row = flow.arange(len(tables[i]), dtype=flow.int64, device=arg.device).reshape(
            [1, 1] + shape
        )
        table = _index([p for window in tables[i] for p in window], arg.device)
        pos = table.index_select(0, (row * taps[i] + j).flatten()).reshape(arg.shape)
        term = pos * math.prod(spatial[i + 1 :])
        flat = term if flat is None else flat + term
    return flat


def _sliding_tables(spatial, out, kernel, stride, padding, dilation):
    return [
        [[o * s - p + j * d for j in range(k)] for o in range(n)]
        for n, k, s, p, d in zip(out, kernel, stride, padding, dilation)
    ]


# ---- max pooling ---------------------------------------------------------------------------


def _max_pool(fn, nd, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, batched = _batched(fn, input, nd)
    kernel, stride, padding, dilation = _window_args(fn, nd, kernel_size, stride, padding, dilation)
    spatial = list(x.shape[2:])
    out = _out_sizes(fn, tuple(x.shape), kernel, stride, padding, dilation, ceil_mode)
    plain = all(d == 1 for d in dilation)
    if plain and not (return_indices and nd == 3):
        extras = _right_extras(spatial, out, kernel, stride, padding)
        xp = _pad_right(x, extras, _NEG_INF)
        values = _separable(xp, nd, kernel, stride, padding, _kernel_max)
        indices = (
            _kernel_indices(xp, nd, kernel, stride, padding, spatial) if return_indices else None
        )
    else:
        tables = _sliding_tables(spatial, out, kernel, stride, padding, dilation)
        values, indices = _gather_max(x, tables)
    if not batched:
        values = values.squeeze(0)
        indices = indices.squeeze(0) if indices is not None else None
    return (values, indices) if return_indices else values


def _kernel_indices(xp, nd, kernel, stride, padding, spatial):
    """max_pool2d_indices on the right-padded input, renumbered for the unpadded width."""
    x4 = xp.unsqueeze(2) if nd == 1 else xp
    k, s, p = (
        (kernel, stride, padding) if nd == 2 else ((1,) + kernel, (1,) + stride, (0,) + padding)
    )
    attrs = {"kernel_size": list(k), "stride": list(s), "padding": list(p)}
    idx = flow._C.dispatch("max_pool2d_indices", [x4.detach()], attrs)[0]
    width = x4.shape[3]
    if width != spatial[-1]:
        idx = (idx // width) * spatial[-1] + idx % width
    return idx.squeeze(2) if nd == 1 else idx


def max_pool1d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    return _max_pool(
        "max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices
    )


def max_pool2d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    return _max_pool(
        "max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices
    )


def max_pool3d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    return _max_pool(
        "max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices
    )


def max_pool1d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


# ---- average pooling -----------------------------------------------------------------------


def _divisors(spatial, out, kernel, stride, padding, count_include_pad):
    """PyTorch's per-dimension window sizes: windows are cut at the padded input's end, and
    without count_include_pad at the input's ends."""
    rows = []
    for size, n, k, s, p in zip(spatial, out, kernel, stride, padding):
        row = []
        for o in range(n):
            start = o * s - p
            end = min(start + k, size + p)
            if not count_include_pad:
                start, end = max(start, 0), min(end, size)
            row.append(end - start)
        rows.append(row)
    return rows


def _avg_pool(fn, nd, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor):
    x, batched = _batched(fn, input, nd)
    kernel, stride, padding, _ = _window_args(fn, nd, kernel_size, stride, padding)
    spatial = list(x.shape[2:])
    out = _out_sizes(fn, tuple(x.shape), kernel, stride, padding, (1,) * nd, ceil_mode)
    if divisor is not None and divisor == 0:
        raise RuntimeError(f"[{fn}] divisor must be not zero")
    xp = _pad_right(x, _right_extras(spatial, out, kernel, stride, padding), 0.0)
    mean = _separable(xp, nd, kernel, stride, padding, _kernel_mean)  # window sum / prod(kernel)
    size = math.prod(kernel)
    if divisor is not None:
        y = mean * (size / divisor)
    else:
        rows = _divisors(spatial, out, kernel, stride, padding, count_include_pad)
        if all(v == k for row, k in zip(rows, kernel) for v in row):
            y = mean
        else:
            factor = None
            for i, row in enumerate(rows):
                shape = [1] * nd
                shape[i] = len(row)
                t = flow.tensor(row, dtype=x.dtype, device=x.device).reshape(shape)
                factor = t if factor is None else factor * t
            y = mean * (size / factor)
    return y if batched else y.squeeze(0)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    return _avg_pool(
        "avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None
    )


def avg_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    return _avg_pool(
        "avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
        divisor_override,
    )  # fmt: skip


def avg_pool3d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    return _avg_pool(
        "avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
        divisor_override,
    )  # fmt: skip


# ---- LP pooling (PyTorch's formula: the p-th root of an average pool of x^p) -----------------


def _lp_pool(fn, nd, input, norm_type, kernel_size, stride, ceil_mode):
    kernel = _ntuple(kernel_size, nd, "kernel_size", fn)
    pool = (avg_pool1d, avg_pool2d, avg_pool3d)[nd - 1]
    out = pool(input.pow(norm_type), kernel, stride, 0, ceil_mode)
    # PyTorch's sign(out) * relu(|out|): |out| is never negative, and a NaN must stay NaN
    return (flow.sign(out) * flow.abs(out)).mul(math.prod(kernel)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool("lp_pool1d", 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool("lp_pool2d", 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool("lp_pool3d", 3, input, norm_type, kernel_size, stride, ceil_mode)


# ---- adaptive pooling ----------------------------------------------------------------------


def _adaptive_ranges(size, out):
    """PyTorch's adaptive windows: [floor(o * size / out), ceil((o + 1) * size / out))."""
    return [((o * size) // out, -(-((o + 1) * size) // out)) for o in range(out)]


def _adaptive_sizes(fn, x, nd, output_size):
    """output_size as nd sizes, None entries taking the input's size."""
    sizes = output_size if isinstance(output_size, (list, tuple)) else (output_size,) * nd
    if len(sizes) == 1:
        sizes = tuple(sizes) * nd
    if len(sizes) != nd or not all(s is None or isinstance(s, int) for s in sizes):
        raise ValueError(f"[{fn}] output_size must be an int or {nd} ints, got {output_size!r}")
    sizes = [x.shape[2 + i] if s is None else s for i, s in enumerate(sizes)]
    if any(s < 0 for s in sizes) or any(v == 0 for v in x.shape[2:]):
        raise RuntimeError(
            f"[{fn}] output_size {tuple(sizes)} must be non-negative and the spatial sizes of "
            f"input {list(x.shape)} positive"
        )
    return sizes


def _adaptive_avg(fn, nd, input, output_size):
    x, batched = _batched(fn, input, nd)
    sizes = _adaptive_sizes(fn, x, nd, output_size)
    y = x
    for i, out in enumerate(sizes):
        size = x.shape[2 + i]
        if out == size:
            continue
        # averaging along one dimension is a matmul with a constant (size, out) matrix
        matrix = [[0.0] * out for _ in range(size)]
        for o, (start, end) in enumerate(_adaptive_ranges(size, out)):
            for j in range(start, end):
                matrix[j][o] = 1.0 / (end - start)
        m = flow.tensor(matrix, dtype=x.dtype, device=x.device)
        y = flow.matmul(y.movedim(2 + i, -1), m).movedim(-1, 2 + i)
    return y if batched else y.squeeze(0)


def adaptive_avg_pool1d(input, output_size):
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input, output_size):
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_avg_pool3d(input, output_size):
    return _adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


def _adaptive_max(fn, nd, input, output_size, return_indices):
    x, batched = _batched(fn, input, nd)
    sizes = _adaptive_sizes(fn, x, nd, output_size)
    if any(s == 0 for s in sizes):
        raise RuntimeError(f"[{fn}] output_size {tuple(sizes)} must be positive")
    tables = []
    for i, out in enumerate(sizes):
        ranges = _adaptive_ranges(x.shape[2 + i], out)
        taps = max(end - start for start, end in ranges)
        # shorter windows repeat their last tap, which changes neither the max nor its index
        tables.append([[min(start + j, end - 1) for j in range(taps)] for start, end in ranges])
    values, indices = _gather_max(x, tables)
    if not batched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return (values, indices) if return_indices else values


def adaptive_max_pool1d(input, output_size, return_indices=False):
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, return_indices)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool3d(input, output_size, True)


# ---- fractional max pooling ----------------------------------------------------------------


def _fractional_starts(sample, size, out, k):
    """PyTorch's pseudo-random window starts, (N, C, out), from one sample per plane."""
    last = flow.full(list(sample.shape) + [1], size - k, dtype=flow.int64, device=sample.device)
    if out == 1:
        return last
    alpha = (size - k) / (out - 1)
    steps = flow.arange(out - 1, dtype=sample.dtype, device=sample.device)
    u = sample.unsqueeze(-1)
    starts = ((steps + u) * alpha).floor() - (u * alpha).floor()
    return flow.cat([starts.to(flow.int64), last], dim=-1)


def _fractional(fn, nd, input, kernel_size, output_size, output_ratio, return_indices, samples):
    x, batched = _batched(fn, input, nd)
    kernel = _ntuple(kernel_size, nd, "kernel_size", fn)
    spatial = list(x.shape[2:])
    if output_size is None and output_ratio is None:
        raise ValueError(f"[{fn}] requires specifying either an output_size or an output_ratio")
    if output_size is None:
        ratio = output_ratio if isinstance(output_ratio, (list, tuple)) else (output_ratio,) * nd
        if len(ratio) != nd or not all(0 < r < 1 for r in ratio):
            raise ValueError(f"[{fn}] output_ratio must be {nd} values in (0, 1), got {ratio}")
        out = [int(size * r) for size, r in zip(spatial, ratio)]
    else:
        out = list(_ntuple(output_size, nd, "output_size", fn))
    for size, o, k in zip(spatial, out, kernel):
        if k < 1 or o < 1 or o + k - 1 > size:
            raise RuntimeError(
                f"[{fn}] kernel_size {kernel} too large relative to input {list(input.shape)} "
                f"and output size {tuple(out)} (need output + kernel - 1 <= input)"
            )
    n, c = x.shape[0], x.shape[1]
    if samples is None:
        samples = flow.rand(n, c, nd, dtype=x.dtype, device=x.device)
    if samples.ndim == 3 and samples.shape[0] > n and tuple(samples.shape[1:]) == (c, nd):
        samples = samples[
            :n
        ]  # PyTorch reads the first planes' samples, e.g. for an unbatched input
    if tuple(samples.shape) != (n, c, nd):
        raise RuntimeError(
            f"[{fn}] _random_samples of shape {tuple(samples.shape)} should be {(n, c, nd)} for "
            f"input {list(input.shape)}"
        )
    # PyTorch's sample order: 2-d (W, H), 3-d (T, H, W)
    order = [1, 0] if nd == 2 else list(range(nd))
    starts = [
        _fractional_starts(samples[:, :, order[i]], spatial[i], out[i], kernel[i])
        for i in range(nd)
    ]
    y, shape = x, list(x.shape)
    for i in range(nd):
        taps = flow.arange(kernel[i], dtype=flow.int64, device=x.device)
        idx = (starts[i].unsqueeze(-1) + taps).reshape(n, c, out[i] * kernel[i])
        shape[2 + i] = out[i] * kernel[i]
        view = [n, c] + [1] * nd
        view[2 + i] = out[i] * kernel[i]
        y = y.gather(2 + i, idx.reshape(view).expand(shape))
    y = y.reshape([n, c] + [v for i in range(nd) for v in (out[i], kernel[i])])
    y = y.permute([0, 1] + [2 + 2 * i for i in range(nd)] + [3 + 2 * i for i in range(nd)])
    values, arg = y.reshape([n, c] + out + [math.prod(kernel)]).max(-1)
    flat, rem = None, arg
    for i in reversed(range(nd)):
        j, rem = rem % kernel[i], rem // kernel[i]
        view = [n, c] + [1] * nd
        view[2 + i] = out[i]
        pos = starts[i].reshape(view) + j
        term = pos * math.prod(spatial[i + 1 :])
        flat = term if flat is None else flat + term
    if not batched:
        values, flat = values.squeeze(0), flat.squeeze(0)
    return (values, flat) if return_indices else values


def fractional_max_pool2d(
    input,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices=False,
    _random_samples=None,
):
    return _fractional(
        "fractional_max_pool2d", 2, input, kernel_size, output_size, output_ratio,
        return_indices, _random_samples,
    )  # fmt: skip


def fractional_max_pool3d(
    input,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices=False,
    _random_samples=None,
):
    return _fractional(
        "fractional_max_pool3d", 3, input, kernel_size, output_size, output_ratio,
        return_indices, _random_samples,
    )  # fmt: skip


def fractional_max_pool2d_with_indices(
    input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
    _random_samples=None,
):  # fmt: skip
    return fractional_max_pool2d(
        input, kernel_size, output_size, output_ratio, True, _random_samples
    )


def fractional_max_pool3d_with_indices(
    input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
    _random_samples=None,
):  # fmt: skip
    return fractional_max_pool3d(
        input, kernel_size, output_size, output_ratio, True, _random_samples
    )


# ---- max_unpool ----------------------------------------------------------------------------


def _unpool_size(fn, x, nd, kernel, stride, padding, output_size):
    default = [(x.shape[2 + i] - 1) * stride[i] - 2 * padding[i] + kernel[i] for i in range(nd)]
    if output_size is None:
        return default
    size = list(output_size)
    if len(size) == nd + 2:
        size = size[2:]
    if len(size) != nd:
        raise ValueError(f"[{fn}] output_size should be a sequence of {nd} or {nd + 2} ints")
    for s, d, st in zip(size, default, stride):
        if not d - st < s < d + st:
            raise ValueError(
                f"[{fn}] invalid output_size {tuple(size)} (dim must be between "
                f"{[d - st + 1 for d, st in zip(default, stride)]} and "
                f"{[d + st - 1 for d, st in zip(default, stride)]})"
            )
    return size


def _max_unpool(fn, nd, input, indices, kernel_size, stride, padding, output_size):
    x, batched = _batched(fn, input, nd)
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(
            f"[{fn}] expected shape of indices to be the same as that of the input, but got "
            f"indices {list(indices.shape)} and input {list(input.shape)}"
        )
    idx = indices if batched else indices.unsqueeze(0)
    kernel = _ntuple(kernel_size, nd, "kernel_size", fn)
    stride = kernel if stride is None else _ntuple(stride, nd, "stride", fn)
    padding = _ntuple(padding, nd, "padding", fn)
    size = _unpool_size(fn, x, nd, kernel, stride, padding, output_size)
    n, c = x.shape[0], x.shape[1]
    out = flow.zeros(n, c, math.prod(size), dtype=x.dtype, device=x.device)
    try:
        out = out.scatter(2, idx.reshape(n, c, -1), x.reshape(n, c, -1))
    except IndexError as e:
        raise RuntimeError(
            f"[{fn}] found an invalid max index for an output of spatial size {tuple(size)} "
            f"(input {list(input.shape)}): {e}"
        ) from None
    out = out.reshape([n, c] + size)
    return out if batched else out.squeeze(0)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)
