"""How much of the PyTorch API that model files use exists in oneflowlike (docs/api-coverage.md).

Reads model files with `ast` (nothing is executed), lists the torch names they use, maps each to
oneflowlike's (`torch.X` -> `oneflowlike.X`, `Tensor.X` -> `oneflowlike.Tensor.X`) and checks
that it exists. What counts as a use:

- torch: an attribute chain rooted at a name bound by `import torch...` / `from torch... import`,
  resolved through aliases (`import torch.nn.functional as F`, `from torch import nn`, ...),
  recorded whole (`torch.nn.functional.relu`, `torch.backends.cuda.matmul`), or a bare name
  imported from torch (`CrossEntropyLoss`, `Tensor`);
- Tensor methods: `<expr>.name`, read, written or called, where `name` is an attribute of
  `torch.Tensor`, except (a) on a receiver that is `self`/`cls` (a module's own attributes, e.g.
  `self.norm`), (b) on a chain rooted at any imported name (`math.exp`, `np.sqrt`), and (c) the
  names in AMBIGUOUS, which str, list, dict, set or int also have (and `norm`, a submodule's
  usual name). Modules themselves (`hasattr(torch.nn.functional, ...)`) are not API names.

Categories: `torch` (torch.* outside torch.nn), `tensor`, `nn_module` (torch.nn.Module
subclasses), `nn_other` (nn.Parameter, nn.init, nn.utils, ...), `functional`
(torch.nn.functional), and `private` (a `_name` component: listed, not in the coverage figure).

    python3 tools/api_coverage.py FILE... [--sources S.json] [--json OUT.json]
    python3 tools/api_coverage.py /tmp/model_files/*.py \\
        --sources tests/python/torch_api_usage.json --json tests/python/torch_api_usage.json
    python3 tools/api_coverage.py --check tests/python/torch_api_usage.json
"""

import argparse
import ast
import hashlib
import importlib
import inspect
import json
import os
import sys

CATEGORIES = ("torch", "tensor", "nn_module", "nn_other", "functional")
PRIVATE = "private"
# Tensor attributes that the builtin containers, str and numbers also have: a receiver's type is
# unknown to `ast`, so `s.split(",")`, `d.values()`, `l.sort()`, `i.real` would read as Tensor uses.
# And `norm`: in model code nearly always a submodule (`attn.norm(x)`, `model.norm.weight`).
AMBIGUOUS = frozenset({"add", "imag", "index", "real", "sort", "split", "values", "norm"})
# A Tensor's attribute on these receivers is the module's own (`self.norm`, `self.to`).
SELF_NAMES = frozenset({"self", "cls"})


def torch_tensor_attrs():
    """The public attribute names of torch.Tensor (needs torch; only extraction does)."""
    import torch

    return frozenset(n for n in dir(torch.Tensor) if not n.startswith("_"))


def _chain(node):
    """['a', 'b', 'c'] for the expression a.b.c; None if it is not a pure name/attribute chain."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _imports(tree):
    """(torch aliases: local name -> dotted torch path, every other imported local name)."""
    torch_alias, other = {}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                top = a.name.split(".")[0]
                local = a.asname or top
                target = a.name if a.asname else top
                if top == "torch":
                    torch_alias[local] = target
                else:
                    other.add(local)
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            is_torch = node.level == 0 and (mod == "torch" or mod.startswith("torch."))
            for a in node.names:
                local = a.asname or a.name
                if is_torch and a.name != "*":
                    torch_alias[local] = f"{mod}.{a.name}"
                else:
                    other.add(local)
    return torch_alias, other - set(torch_alias)


def _annotation_nodes(tree):
    """ids of every node inside an annotation (arguments, returns, `x: T = ...`)."""
    roots = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
                if a is not None and a.annotation is not None:
                    roots.append(a.annotation)
            if node.returns is not None:
                roots.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
    return {id(n) for r in roots for n in ast.walk(r)}


class _Collector(ast.NodeVisitor):
    def __init__(self, tree, tensor_attrs):
        self.torch_alias, self.other_imports = _imports(tree)
        self.tensor_attrs = tensor_attrs
        self.in_annotation = _annotation_nodes(tree)
        self.uses = {}  # name -> True if any use is outside an annotation

    def _use(self, name, node):
        self.uses[name] = self.uses.get(name, False) or id(node) not in self.in_annotation

    def _tensor_attr(self, attr, receiver_chain, node):
        if attr not in self.tensor_attrs or attr in AMBIGUOUS:
            return
        if receiver_chain is not None:
            if receiver_chain == [receiver_chain[0]] and receiver_chain[0] in SELF_NAMES:
                return
            root = receiver_chain[0]
            if root in self.other_imports or root in self.torch_alias:
                return
        self._use(f"torch.Tensor.{attr}", node)

    def visit_Import(self, node):
        pass

    visit_ImportFrom = visit_Import

    def visit_Attribute(self, node):
        chain = _chain(node)
        if chain is None:  # the receiver is a call, subscript, ...: `f(x).view`
            self._tensor_attr(node.attr, None, node)
            self.generic_visit(node)
        elif chain[0] in self.torch_alias:
            self._use(".".join([self.torch_alias[chain[0]]] + chain[1:]), node)
        else:
            for i in range(1, len(chain)):
                self._tensor_attr(chain[i], chain[:i], node)

    def visit_Name(self, node):
        path = self.torch_alias.get(node.id)
        # `torch` alone (getattr(torch, n)) is a module, not an API name
        if path is not None and isinstance(node.ctx, ast.Load) and path != "torch":
            self._use(path, node)


def extract(source, tensor_attrs):
    """{torch name: used outside annotations?} for one file's source text."""
    tree = ast.parse(source)
    c = _Collector(tree, tensor_attrs)
    c.visit(tree)
    return c.uses


def category(name, is_module_class=None):
    """The category of a dotted torch name (see the module docstring)."""
    parts = name.split(".")
    if any(p.startswith("_") and not p.endswith("__") for p in parts):
        return PRIVATE
    if name.startswith("torch.Tensor."):
        return "tensor"
    if name.startswith("torch.nn.functional."):
        return "functional"
    if name.startswith("torch.nn.") and len(parts) >= 3:
        head = parts[2]
        if is_module_class is not None:
            return "nn_module" if is_module_class(name) else "nn_other"
        return (
            "nn_module"
            if head[:1].isupper() and head not in ("Parameter", "Buffer")
            else "nn_other"
        )
    return "torch"


def _torch_is_module(name):
    """True if the torch name `name` is a Python module, not an API (needs torch)."""
    return inspect.ismodule(_resolve("torch", name.split(".")[1:]))


def _torch_module_class(name):
    """True if the torch object `name` is an nn.Module subclass (needs torch)."""
    import torch

    obj = _resolve("torch", name.split(".")[1:])
    return isinstance(obj, type) and issubclass(obj, torch.nn.Module)


_MISSING = object()


def _resolve(root, parts):
    """The object at root.parts[0].parts[1]..., importing submodules as needed; _MISSING if none."""
    try:
        obj = importlib.import_module(root)
    except ImportError:
        return _MISSING
    path = root
    for p in parts:
        path = f"{path}.{p}"
        try:
            obj = getattr(obj, p)
            continue
        except AttributeError:
            pass
        except Exception:  # a property that raised on this object: it exists
            return True
        try:
            obj = importlib.import_module(path)
        except ImportError:
            return _MISSING
    return obj


def flow_name(name):
    """The oneflowlike name for a torch name: torch.X -> oneflowlike.X."""
    return "oneflowlike" + name[len("torch") :]


_INSTANCE = []


def present(name):
    """Whether oneflowlike has the counterpart of the torch name `name`."""
    parts = flow_name(name).split(".")
    if _resolve(parts[0], parts[1:]) is not _MISSING:
        return True
    if name.startswith("torch.Tensor.") and len(parts) == 3:
        if not _INSTANCE:
            import oneflowlike

            _INSTANCE.append(oneflowlike.zeros(2, 2))  # some methods are patched onto instances
        try:
            getattr(_INSTANCE[0], parts[2])
        except AttributeError:
            return False
        except Exception:  # it exists, and raised for this instance
            return True
        return True
    return False


def coverage(entries):
    """{category or 'overall': {present, total, percent}} over the non-private entries."""
    out = {}
    for key in ("overall",) + CATEGORIES:
        sel = [e for e in entries if e["category"] != PRIVATE]
        if key != "overall":
            sel = [e for e in sel if e["category"] == key]
        n = sum(e["present"] for e in sel)
        out[key] = {"present": n, "total": len(sel), "percent": _pct(n, len(sel))}
    return out


def _pct(n, total):
    return round(100.0 * n / total, 1) if total else 100.0


def measure(paths, sources=None, tensor_attrs=None):
    """The usage list of the files at `paths`: a dict ready for --json."""
    tensor_attrs = torch_tensor_attrs() if tensor_attrs is None else tensor_attrs
    sources = sources or {}
    files, used = {}, {}
    for path in sorted(paths, key=os.path.basename):
        base = os.path.basename(path)
        with open(path, "rb") as f:
            data = f.read()
        files[base] = dict(sources.get(base, {}), sha256=hashlib.sha256(data).hexdigest())
        for name, real_use in extract(data.decode("utf-8"), tensor_attrs).items():
            u = used.setdefault(name, {"files": [], "annotation_only": True})
            u["files"].append(base)
            u["annotation_only"] = u["annotation_only"] and not real_use
    try:
        import torch  # noqa: F401

        is_module_class, is_module = _torch_module_class, _torch_is_module
    except ImportError:
        is_module_class, is_module = None, lambda name: False
    entries = []
    for name, u in used.items():
        if is_module(name):
            continue
        cat = category(name, is_module_class if name.startswith("torch.nn.") else None)
        entries.append(
            {
                "name": name,
                "category": cat,
                "oneflowlike": flow_name(name),
                "files": sorted(u["files"]),
                "annotation_only": u["annotation_only"],
                "present": present(name),
            }
        )
    entries.sort(key=lambda e: (-len(e["files"]), e["name"]))
    try:
        import torch

        version = torch.__version__
    except ImportError:
        version = None
    return {
        "torch_version": version,  # whose dir(torch.Tensor) decided what a Tensor method is
        "files": files,
        "coverage": coverage(entries),
        "apis": entries,
    }


def recheck(saved):
    """The saved list re-measured against the installed oneflowlike: (entries, lost, gained)."""
    entries, lost, gained = [], [], []
    for e in saved["apis"]:
        now = present(e["name"])
        if e["present"] and not now:
            lost.append(e["name"])
        elif now and not e["present"]:
            gained.append(e["name"])
        entries.append(dict(e, present=now))
    return entries, lost, gained


def format_table(result):
    lines = [f"{'name':58} {'category':10} {'files':>5} present  used in"]
    for e in result["apis"]:
        mark = "yes" if e["present"] else "NO"
        note = " (annotations only)" if e["annotation_only"] else ""
        used_in = ", ".join(e["files"])
        lines.append(
            f"{e['name']:58} {e['category']:10} {len(e['files']):5} {mark:7}  {used_in}{note}"
        )
    return "\n".join(lines)


def format_coverage(cov):
    return "\n".join(
        f"{k:10} {v['present']:4} / {v['total']:4}  {v['percent']:5.1f}%" for k, v in cov.items()
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="model files (Python source) to read")
    ap.add_argument(
        "--sources", help="JSON: file base name -> where it came from; or a saved usage list"
    )
    ap.add_argument("--json", help="write the usage list and coverage here")
    ap.add_argument("--check", help="re-measure a saved list; exit 1 if any name went missing")
    ap.add_argument("--quiet", action="store_true", help="print only the coverage figures")
    args = ap.parse_args(argv)
    if args.check:
        with open(args.check) as f:
            saved = json.load(f)
        entries, lost, gained = recheck(saved)
        now = coverage(entries)
        print(format_coverage(now))
        missing = [e["name"] for e in entries if not e["present"] and e["category"] != PRIVATE]
        print(f"missing now ({len(missing)}): {', '.join(missing)}")
        if gained:
            print(f"newly present (re-run with --json to ratchet up): {', '.join(gained)}")
        if lost:
            print(f"WENT MISSING: {', '.join(lost)}")
            return 1
        return 0
    if not args.files:
        ap.error("give model files, or --check")
    sources = {}
    if args.sources:
        with open(args.sources) as f:
            sources = json.load(f)
        if "apis" in sources:  # a saved usage list: reuse its provenance
            sources = {
                k: {a: b for a, b in v.items() if a != "sha256"}
                for k, v in sources["files"].items()
            }
    result = measure(args.files, sources)
    if not args.quiet:
        print(format_table(result))
    print(format_coverage(result["coverage"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1, sort_keys=False)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
