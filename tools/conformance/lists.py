"""PyTorch's public lists, and how a name in each resolves to ours (docs/torch-conformance.md).

The rules, fixed here so that the published figures can be reproduced:

- nn modules: `torch.nn.modules.__all__`; present when `flow.nn.<name>` exists.
- nn.functional: the callables in `dir(torch.nn.functional)` that are not classes or modules, do
  not start with `_`, and are not helpers imported from elsewhere (typing's `Optional`,
  `torch.overrides.handle_torch_function`, `torch._jit_internal.boolean_dispatch`, the
  `torch._C.has_torch_function*` checks) or the argument checker `assert_int_or_pair`; present
  when `flow.nn.functional.<name>` exists.
- optimizers: the classes in `torch.optim.__all__` that subclass `torch.optim.Optimizer`
  (`Optimizer` itself included); present when `flow.optim.<name>` exists.
- lr schedulers: `torch.optim.lr_scheduler.__all__`; present in `flow.optim.lr_scheduler`.
- OpInfo names: `{op.name for op in op_db}` without the private ones (a leading `_`: `_chunk_cat`,
  `__radd__`, ...). A name resolves by `op_target` below.
"""

import inspect

# Modules whose callables torch.nn.functional re-exports as helpers, not as API.
_HELPER_MODULES = frozenset({"typing", "torch.overrides", "torch._jit_internal", "torch._C"})
_HELPER_NAMES = frozenset({"assert_int_or_pair"})


def nn_modules():
    import torch

    return sorted(torch.nn.modules.__all__)


def nn_functional():
    import torch.nn.functional as F

    names = []
    for name in dir(F):
        obj = getattr(F, name)
        if name.startswith("_") or name in _HELPER_NAMES or not callable(obj):
            continue
        if inspect.isclass(obj) or inspect.ismodule(obj):
            continue
        if getattr(obj, "__module__", None) in _HELPER_MODULES:
            continue
        names.append(name)
    return sorted(names)


def optimizers():
    import torch

    return sorted(
        n
        for n in torch.optim.__all__
        if inspect.isclass(getattr(torch.optim, n, None))
        and issubclass(getattr(torch.optim, n), torch.optim.Optimizer)
    )


def lr_schedulers():
    import torch.optim.lr_scheduler as S

    return sorted(S.__all__)


def op_db():
    """The OpInfo database (imports torch.testing._internal, which needs expecttest)."""
    from torch.testing._internal.common_methods_invocations import op_db as db
    from torch.testing._internal import common_utils
    from torch.testing._internal.opinfo import core

    # Each sample_inputs call looks for a unittest.TestCase up the stack with inspect.stack(),
    # seconds per entry under pytest; there is none here, so the answer is always None.
    core.extract_test_fn = common_utils.extract_test_fn = lambda: None
    return db


def opinfo_names(db=None):
    return sorted({op.name for op in (db or op_db()) if not op.name.startswith("_")})


def _walk(root, dotted):
    obj = root
    for part in dotted.split("."):
        try:
            obj = getattr(obj, part)
        except Exception:  # a missing name, or a lazy attribute that raises on access
            return None
    return obj


def op_target(name):
    """(our object, how it was found) for an OpInfo name, or (None, where it was looked for).

    `torch.X` names drop the prefix; then `flow.<dotted name>` (so `nn.functional.x`, `linalg.x`,
    `special.x`, `fft.x`, `masked.x` resolve in those namespaces). A plain name that torch has
    only as a Tensor method (`expand`, `contiguous`, `T`) resolves to `flow.Tensor.<name>`."""
    import torch

    import oneflowlike as flow

    path = name[len("torch.") :] if name.startswith("torch.") else name
    obj = _walk(flow, path)
    if obj is not None and not inspect.ismodule(obj):
        return obj, "flow." + path
    if "." not in path and _walk(torch, path) is None and hasattr(torch.Tensor, path):
        obj = _walk(flow.Tensor, path)
        if obj is not None:
            return obj, "Tensor." + path
        return None, "Tensor." + path
    return None, "flow." + path


def _present(root, names):
    return [n for n in names if _walk(root, n) is not None]


def measure_lists(db=None):
    """{list name: (every name, the names oneflowlike has)}, in the order the table prints."""
    import oneflowlike as flow

    out = {
        "nn modules": (nn_modules(), None),
        "nn.functional": (nn_functional(), None),
        "optimizers": (optimizers(), None),
        "lr schedulers": (lr_schedulers(), None),
    }
    roots = {
        "nn modules": flow.nn,
        "nn.functional": flow.nn.functional,
        "optimizers": flow.optim,
        "lr schedulers": flow.optim.lr_scheduler,
    }
    for key, (names, _) in list(out.items()):
        out[key] = (names, _present(roots[key], names))
    names = opinfo_names(db)
    out["OpInfo names"] = (names, [n for n in names if op_target(n)[0] is not None])
    return out


def opinfo_area(name):
    """The namespace an OpInfo name belongs to, for the per-area table."""
    if name.startswith("torch."):
        return "torch.*"
    if "." not in name:
        return "torch"
    head = name.split(".")[0]
    if head == "nn":
        return "nn.functional"
    if head == "signal":
        return "signal.windows"
    return head
