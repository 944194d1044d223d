"""Moving values from torch to oneflowlike through numpy, and comparing results.

`Skip` marks a sample that has no counterpart here (a torch.Generator argument, a complex, sparse
or half-precision tensor): the case is listed with the reason, not counted as a failure."""

import math
import types

import numpy as np

# Tolerances per dtype (forward and gradients): loose enough for composites that sum in another
# order, tight enough to catch a wrong formula.
TOLERANCES = {"float32": (1e-4, 1e-5), "float64": (1e-7, 1e-7)}
GRAD_TOLERANCES = {"float32": (1e-3, 1e-4), "float64": (1e-6, 1e-7)}
_NUMPY_DTYPES = frozenset(
    {"bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float64"}
)


class Skip(Exception):
    """The sample cannot be expressed in oneflowlike; the message says why."""


def dtype_name(dt):
    return str(dt).rsplit(".", 1)[-1]


class Converter:
    """torch -> oneflowlike, remembering which of our tensors each torch tensor became (so that
    gradients can be matched leaf to leaf). `requires_grad` follows torch's leaves."""

    def __init__(self, flow):
        import torch

        self.flow, self.torch = flow, torch
        self.made = {}  # id(torch tensor) -> (torch tensor, our tensor)

    def tensor(self, t, keep_grad=True):
        torch = self.torch
        if id(t) in self.made:
            return self.made[id(t)][1]
        if t.layout != torch.strided:
            raise Skip(f"{t.layout} tensor")
        if t.is_complex():
            raise Skip("complex tensor")
        name = dtype_name(t.dtype)
        if name not in _NUMPY_DTYPES:
            raise Skip(f"{name} tensor")
        if t.device.type != "cpu":
            raise Skip(f"tensor on {t.device}")
        ours = self.flow.tensor(t.detach().numpy().copy())
        if ours.dtype != getattr(self.flow, name):
            ours = ours.to(getattr(self.flow, name))
        if keep_grad and t.requires_grad:
            ours.requires_grad_(True)
        self.made[id(t)] = (t, ours)
        return ours

    def __call__(self, x, keep_grad=True):
        torch, flow = self.torch, self.flow
        if isinstance(x, torch.Tensor):
            return self.tensor(x, keep_grad)
        if isinstance(x, torch.Size):
            return tuple(x)
        if isinstance(x, torch.dtype):
            ours = getattr(flow, dtype_name(x), None)
            if ours is None or dtype_name(x) in ("complex32", "chalf"):
                raise Skip(f"dtype {x}")
            return ours
        if isinstance(x, torch.device):
            if x.type != "cpu":
                raise Skip(f"device {x}")
            return str(x)
        if isinstance(x, torch.Generator):
            raise Skip("torch.Generator argument")
        if isinstance(x, (torch.memory_format, torch.layout)):
            raise Skip(f"{type(x).__name__} argument {x}")
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return type(x)(*(self(v, keep_grad) for v in x))
        if isinstance(x, (list, tuple)):
            return type(x)(self(v, keep_grad) for v in x)
        if isinstance(x, dict):
            return {k: self(v, keep_grad) for k, v in x.items()}
        if isinstance(x, complex):
            raise Skip("complex scalar")
        if isinstance(x, torch.nn.Module):
            raise Skip(f"torch module {type(x).__name__} as an argument")
        if callable(x) and str(getattr(x, "__module__", None)).startswith("torch"):
            return self._function(x)
        return x

    def _function(self, fn):
        """A torch function passed as an argument (`activation=F.gelu`): ours of the same name."""
        torch, flow = self.torch, self.flow
        if isinstance(fn, types.FunctionType) and fn.__module__.startswith("torch.testing"):
            return rebind(fn, flow)
        name = getattr(fn, "__name__", None)
        for troot, root in ((torch.nn.functional, flow.nn.functional), (torch, flow)):
            if name and getattr(troot, name, None) is fn and hasattr(root, name):
                return getattr(root, name)
        raise Skip(f"torch function argument {name or fn!r}")

    def leaves(self):
        """(torch leaf, our tensor) for every converted torch tensor that requires grad."""
        return [(t, o) for t, o in self.made.values() if t.requires_grad]


def flatten(x):
    """The leaves of a (nested) output in a fixed order: tensors, numbers, None, strings."""
    if isinstance(x, (list, tuple)) and not _is_size(x):
        return [leaf for v in x for leaf in flatten(v)]
    if isinstance(x, dict):
        return [leaf for k in sorted(x) for leaf in flatten(x[k])]
    return [x]


def _is_size(x):
    return type(x).__name__ == "Size"


def to_numpy(t):
    """numpy's copy of a torch or oneflowlike tensor; half precisions widen to float32 (numpy
    has no bfloat16)."""
    if not hasattr(t, "detach"):
        return np.asarray(t)
    t = t.detach()
    if hasattr(t, "resolve_conj"):  # torch's lazy conjugate/negative views (ifft's outputs)
        t = t.resolve_conj().resolve_neg()
    if dtype_name(t.dtype) in ("bfloat16", "float16", "half"):
        t = t.float()
    return t.cpu().numpy() if hasattr(t, "cpu") else t.numpy()


def compare(expect, got, tol, shape_only=False):
    """None when `got` (ours) matches `expect` (torch's), else what differs, with the largest
    error. Structures must match; tensors compare shape, dtype and values."""
    import torch

    import oneflowlike as flow

    e_leaves, g_leaves = flatten(expect), flatten(got)
    if len(e_leaves) != len(g_leaves):
        return f"{len(g_leaves)} outputs where torch gives {len(e_leaves)}"
    worst = None
    for i, (e, g) in enumerate(zip(e_leaves, g_leaves)):
        where = f"output {i}: " if len(e_leaves) > 1 else ""
        if isinstance(e, torch.Tensor):
            if not isinstance(g, flow.Tensor):
                return f"{where}{type(g).__name__} where torch gives a Tensor"
            if tuple(e.shape) != tuple(g.shape):
                return f"{where}shape {tuple(g.shape)} where torch gives {tuple(e.shape)}"
            if dtype_name(e.dtype) != dtype_name(g.dtype):
                return f"{where}dtype {dtype_name(g.dtype)} where torch gives {dtype_name(e.dtype)}"
            if shape_only:
                continue
            err = _array_error(to_numpy(e), to_numpy(g), tol)
        elif isinstance(e, torch.dtype):
            err = None if dtype_name(e) == dtype_name(g) else f"{g} where torch gives {e}"
        elif _is_size(e):
            err = None if tuple(e) == tuple(g) else f"{tuple(g)} where torch gives {tuple(e)}"
        elif isinstance(e, (bool, np.bool_)) or e is None or isinstance(e, str):
            err = None if e == g and type(g) is type(e) else f"{g!r} where torch gives {e!r}"
        elif isinstance(e, (int, float)):
            if isinstance(g, flow.Tensor) or not isinstance(g, (int, float)):
                return f"{where}{type(g).__name__} where torch gives {type(e).__name__}"
            err = None if shape_only else _array_error(np.asarray(e), np.asarray(g), tol)
        else:
            err = None if shape_only or e == g else f"{g!r} where torch gives {e!r}"
        if isinstance(err, str):
            return where + err
        if err is not None and (worst is None or err > worst[0]):
            worst = (err, where)
    if worst is not None:
        return f"{worst[1]}largest error {worst[0]:.3g}"
    return None


def _array_error(e, g, tol):
    """None when close; the largest absolute error (a float) when not; a str for a mismatch that
    has no size (nan placement, booleans)."""
    if e.dtype.kind in "biu":
        if np.array_equal(e, g):
            return None
        bad = int(np.sum(e != g))
        return f"{bad} of {e.size} elements differ"
    wide = np.complex128 if "c" in (e.dtype.kind, g.dtype.kind) else np.float64
    e, g = e.astype(wide), g.astype(wide)
    rtol, atol = tol
    if np.allclose(g, e, rtol=rtol, atol=atol, equal_nan=True):
        return None
    diff = np.abs(g - e)
    finite = np.isfinite(diff)
    if not finite.all() and not np.array_equal(np.isnan(e), np.isnan(g)):
        return "nan where torch has a number (or the reverse)"
    return float(np.max(diff[finite])) if finite.any() else math.inf


def rebind(fn, flow):
    """A lambda from torch's test database, with `torch` (and `F`) in its globals replaced by
    oneflowlike: most of them call a method or one torch function on the sample."""
    if not isinstance(fn, types.FunctionType):
        return None
    glb = dict(fn.__globals__)
    glb["torch"] = flow
    if "F" in glb:
        glb["F"] = flow.nn.functional
    return types.FunctionType(fn.__code__, glb, fn.__name__, fn.__defaults__, fn.__closure__)
