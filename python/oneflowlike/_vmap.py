"""flow.vmap (torch.vmap, torch.func.vmap): maps a function over a batch dimension.

There are no batched tensors here: the wrapper calls func once per batch element, on the inputs'
slices (Tensor.select), and stacks the results along out_dims. The results, their gradients
(select and stack are differentiable) and nesting are PyTorch's; only the speed is not (one call
per element, whatever chunk_size says). Python scalars and other non-tensor leaves are passed as
they are (their in_dim must be None).
"""

import sys
import types

import oneflowlike as flow

_RANDOMNESS = ("error", "different", "same")


# ---- a small pytree: tuples, lists and dicts are nodes, everything else a leaf ----------------


def _is_node(x):
    return isinstance(x, (tuple, list, dict))


def _children(x):
    return list(x.values()) if isinstance(x, dict) else list(x)


def _rebuild(like, children):
    if isinstance(like, dict):
        return dict(zip(like.keys(), children))
    if isinstance(like, tuple) and hasattr(like, "_fields"):  # a namedtuple
        return type(like)(*children)
    return type(like)(children)


def _leaves(x):
    if _is_node(x):
        return [leaf for c in _children(x) for leaf in _leaves(c)]
    return [x]


def _map(fn, x):
    """x with fn applied to each leaf."""
    if _is_node(x):
        return _rebuild(x, [_map(fn, c) for c in _children(x)])
    return fn(x)


def _broadcast_prefix(prefix, tree, what, fname):
    """One entry of `prefix` (an int/None, or a tree whose leaves are) per leaf of `tree`."""
    if prefix is None or isinstance(prefix, int):
        return [prefix] * len(_leaves(tree))
    if (
        not _is_node(prefix)
        or not _is_node(tree)
        or isinstance(prefix, dict) != isinstance(tree, dict)
    ):
        raise ValueError(
            f"vmap({fname}): {what} {prefix!r} is not compatible with the structure of the "
            f"value {_describe(tree)}: give an int, None, or a matching nesting of them"
        )
    p, t = _children(prefix), _children(tree)
    if len(p) != len(t) or (isinstance(tree, dict) and set(prefix) != set(tree)):
        raise ValueError(
            f"vmap({fname}): {what} {prefix!r} is not compatible with the structure of the "
            f"value {_describe(tree)}: {len(p)} entries for {len(t)}"
        )
    if isinstance(tree, dict):
        p = [prefix[k] for k in tree]
    return [d for pi, ti in zip(p, t) for d in _broadcast_prefix(pi, ti, what, fname)]


def _describe(x):
    if isinstance(x, flow.Tensor):
        return f"Tensor{tuple(x.shape)}"
    if _is_node(x):
        inner = ", ".join(_describe(c) for c in _children(x))
        if isinstance(x, dict):
            inner = ", ".join(f"{k!r}: {_describe(v)}" for k, v in x.items())
            return "{" + inner + "}"
        return ("[" + inner + "]") if isinstance(x, list) else ("(" + inner + ")")
    return type(x).__name__


# ---- vmap ---------------------------------------------------------------------------------------


def _check_dim(d, what, fname):
    if d is not None and (isinstance(d, bool) or not isinstance(d, int)):
        raise ValueError(f"vmap({fname}): {what} entries must be int or None, got {d!r}")


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """torch.vmap: func mapped over dimension in_dims of its inputs; results stacked at out_dims.

    in_dims: an int or None for every positional input, or a tuple with one entry per positional
    input, each an int, None (not mapped) or a nesting matching that input's tuples, lists and
    dicts. Keyword arguments are not mapped. out_dims: where each output's batch dimension goes
    (an int, or a nesting matching func's outputs; None: an output that does not depend on the
    batch, taken from the first element). randomness: 'error' raises if func draws from the
    default generator, 'different' draws anew per element, 'same' draws the same for every
    element. chunk_size is accepted for PyTorch's signature; results do not depend on it.

    Runs func once per batch element and stacks the results: equal to PyTorch's results and
    gradients, not to its speed."""
    fname = getattr(func, "__name__", repr(func))
    if randomness not in _RANDOMNESS:
        raise ValueError(
            f"vmap({fname}): randomness must be one of {', '.join(_RANDOMNESS)}, got {randomness!r}"
        )
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(
            f"vmap({fname}): chunk_size must be a positive int or None, got {chunk_size!r}"
        )
    if not (in_dims is None or isinstance(in_dims, (int, tuple))) or isinstance(in_dims, bool):
        raise ValueError(
            f"vmap({fname}): in_dims must be an int, None or a tuple matching the inputs, "
            f"got {type(in_dims).__name__}"
        )

    def wrapped(*args, **kwargs):
        if isinstance(in_dims, tuple) and len(in_dims) != len(args):
            raise ValueError(
                f"vmap({fname}, in_dims={in_dims!r}): in_dims has {len(in_dims)} entries for "
                f"{len(args)} positional inputs {_describe(args)}"
            )
        dims = _broadcast_prefix(in_dims, args, "in_dims", fname)
        leaves = _leaves(args)
        size, mapped = None, []
        for leaf, d in zip(leaves, dims):
            _check_dim(d, "in_dims", fname)
            if d is None:
                mapped.append(None)
                continue
            if not isinstance(leaf, flow.Tensor):
                raise ValueError(
                    f"vmap({fname}, in_dims={in_dims!r}): in_dim {d} for an input of type "
                    f"{type(leaf).__name__}; only tensors can be mapped (use None for it)"
                )
            n = leaf.dim()
            if not -n <= d < n:
                raise ValueError(
                    f"vmap({fname}, in_dims={in_dims!r}): in_dim {d} for an input of shape "
                    f"{tuple(leaf.shape)}: there is no dimension {d} to map over"
                )
            d = d % n
            if size is None:
                size = leaf.shape[d]
            elif leaf.shape[d] != size:
                sizes = [tuple(x.shape) for x, e in zip(leaves, dims) if e is not None]
                raise ValueError(
                    f"vmap({fname}, in_dims={in_dims!r}): the mapped dimensions differ in size: "
                    f"inputs of shapes {sizes}"
                )
            mapped.append(d)
        if size is None:
            raise ValueError(
                f"vmap({fname}, in_dims={in_dims!r}): at least one input must be mapped (a "
                f"tensor with an int in_dim), got {_describe(args)}"
            )
        if size == 0:
            raise ValueError(
                f"vmap({fname}): the mapped dimension has size 0 (inputs {_describe(args)})"
            )
        gen = flow.default_generator()
        start = gen.get_state()
        results = []
        for i in range(size):
            if randomness == "same":
                gen.set_state(start)
            it = iter(leaves)
            it_dims = iter(mapped)

            def element(_leaf):
                leaf, d = next(it), next(it_dims)
                return leaf if d is None else leaf.select(d, i)

            results.append(func(*_map(element, args), **kwargs))
            if randomness == "error" and i == 0 and gen.get_state() != start:
                raise RuntimeError(
                    f"vmap({fname}): called a random operation with randomness='error': pass "
                    f"randomness='different' or 'same', or draw outside vmap"
                )
        return _stack(results, out_dims, fname)

    wrapped.__name__ = f"vmap({fname})"
    wrapped.__doc__ = func.__doc__
    wrapped.__wrapped__ = func
    return wrapped


def _stack(results, out_dims, fname):
    first = results[0]
    dims = _broadcast_prefix(out_dims, first, "out_dims", fname)
    per_element = [_leaves(r) for r in results]
    stacked = []
    for j, d in enumerate(dims):
        _check_dim(d, "out_dims", fname)
        column = [leaves[j] for leaves in per_element]
        if d is None:
            stacked.append(column[0])
            continue
        if not isinstance(column[0], flow.Tensor):
            raise ValueError(
                f"vmap({fname}): func must return tensors (or nestings of them) where out_dims "
                f"is not None, got {type(column[0]).__name__}"
            )
        n = column[0].dim() + 1
        if not -n <= d < n:
            raise ValueError(
                f"vmap({fname}): out_dim {d} for an output of shape "
                f"{tuple(column[0].shape)} per element: it has no dimension {d} once batched"
            )
        stacked.append(flow.stack(column, dim=d % n))
    it = iter(stacked)
    return _map(lambda _: next(it), first)


# flow.func (torch.func): the function transforms, importable as oneflowlike.func.
func = types.ModuleType("oneflowlike.func", "flow.func (torch.func): function transforms.")
func.vmap = vmap
sys.modules["oneflowlike.func"] = func
