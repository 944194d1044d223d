"""nn.Graph.save: the compiled graph as graph.json + weights.safetensors, for the C++ API.

With a dynamic batch the graph is traced a second time at another batch size, and each shape
entry and integer attribute that differs between the two traces is marked as k times the batch:
the C++ loader rebuilds the graph for any batch from those marks (graph/serialize.h)."""

import inspect
import json
import os
import re
import secrets
import shutil

import oneflowlike as flow
from oneflowlike import _C, _checkpoint
from oneflowlike import _safetensors as _st


def save(graph, path, dynamic_batch=None):
    last = graph._last
    if last is None:
        raise RuntimeError("[graph] save: call the graph once first (it compiles then)")
    inputs, single = graph._last_inputs, graph._last_single
    doc = json.loads(last.to_json())
    names = list(inspect.signature(graph.build).parameters)
    has_varargs = any(
        p.kind == p.VAR_POSITIONAL for p in inspect.signature(graph.build).parameters.values()
    )
    doc["input_names"] = (
        [f"input{i}" for i in range(len(inputs))] if has_varargs else names[: len(inputs)]
    )
    n_out = len(doc["outputs"])
    doc["output_names"] = ["output"] if single else [f"output{i}" for i in range(n_out)]
    doc["single_output"] = single
    why_not = _why_no_dynamic_batch(graph, inputs)
    if dynamic_batch and why_not:
        raise ValueError(f"[graph] save(dynamic_batch=True): {why_not}")
    if dynamic_batch is None:
        dynamic_batch = not why_not
    if dynamic_batch:
        _mark_batch(graph, doc, inputs)
    _write(graph, last, doc, path)


def _why_no_dynamic_batch(graph, inputs):
    if graph._optimizers:
        return "a training graph (with an optimizer) saves for its batch size only"
    if any(is_global for _, _, is_global in inputs):
        return "a graph over placements saves for its batch size only"
    if not any(len(shape) for shape, _, _ in inputs):
        return "no input has a batch dimension"
    return None


def _mark_batch(graph, doc, inputs):
    batch = next(shape[0] for shape, _, _ in inputs if len(shape))
    other = batch + 1
    args = [
        flow.zeros(tuple(other if i == 0 and d == batch else d for i, d in enumerate(s)), dtype=dt)
        for s, dt, _ in inputs
    ]
    retraced, _, _ = graph._trace(args)
    marks = []
    _diff(
        json.loads(graph._last.to_json()),
        json.loads(retraced.to_json()),
        batch,
        other,
        (),
        marks,
        doc,
    )
    for where, k in marks:
        if where[0] == "values" and where[2] == "shape":
            entry, index = doc["values"][where[1]], where[3]
        elif where[0] == "nodes" and where[2] == "attrs" and where[4] == "value":
            entry, index = doc["nodes"][where[1]]["attrs"][where[3]], (where[5:] or (0,))[0]
        else:
            raise ValueError(
                f"[graph] save: {_where(doc, where)} changes with the batch; save(path, "
                f"dynamic_batch=False) saves the graph for a batch of {batch} only"
            )
        entry.setdefault("batch", []).append([index, k])
    doc["batch"] = batch


def _diff(a, b, batch, other, where, marks, doc):
    """Collects (path, k) for every integer that is k * batch in `a` and k * other in `b`."""
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        for key in a:
            _diff(a[key], b[key], batch, other, where + (key,), marks, doc)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, batch, other, where + (i,), marks, doc)
    elif type(a) is int and type(b) is int and a % batch == 0 and b == a // batch * other:
        if a != b:
            marks.append((where, a // batch))
    elif a != b:
        raise ValueError(
            f"[graph] save: traced at a batch of {batch} and of {other}, the graph differs at "
            f"{_where(doc, where)} ({_short(a)} and {_short(b)}), not as a multiple of the batch; "
            f"save(path, dynamic_batch=False) saves it for a batch of {batch} only"
        )


def _where(doc, where):
    if len(where) == 4 and where[0] == "values" and where[2] == "shape":
        for i, node in enumerate(doc["nodes"]):
            if where[1] in node["outputs"]:
                return f"dimension {where[3]} of node {i}'s ({node['op']}) output"
        return f"dimension {where[3]} of input value {where[1]}"
    if len(where) >= 2 and where[0] == "nodes":
        op = doc["nodes"][where[1]]["op"]
        return f"node {where[1]} ({op}) {'.'.join(map(str, where[2:]))}"
    return ".".join(map(str, where))


def _short(x):
    text = json.dumps(x)
    return text if len(text) < 60 else text[:57] + "..."


def _named_stably(graph, variables, doc):
    """The variables renamed, in `doc` too: a parameter or buffer of the graph's modules by its
    name (model.blocks.0.attn.key.weight), any other (a constant of the trace) const0, const1,
    ... in the graph's order. Two graphs of one model then write their weights alike."""

    def key(t):
        local = t.to_local() if t.is_global else t
        return (local.data_ptr(), tuple(t.shape), str(t.dtype))

    known = {}
    for attr, module in graph.__dict__.items():
        if isinstance(module, flow.nn.Module):
            for name, t in [*module.named_parameters(), *module.named_buffers()]:
                known.setdefault(key(t), f"{attr}.{name}")
    renamed, taken, constants = {}, set(), 0
    for entry in sorted(doc["variables"], key=lambda e: e["value"]):
        name = known.get(key(variables[entry["name"]]))
        if name is None or name in taken:
            name, constants = f"const{constants}", constants + 1
        taken.add(name)
        renamed[entry["name"]] = name
    for entry in doc["variables"]:
        entry["name"] = renamed[entry["name"]]
    return {renamed[k]: v for k, v in variables.items()}


def _write(graph, last, doc, path):
    """Written aside and renamed, so an interrupted save leaves any earlier one at `path`. A
    graph with global variables is saved by every rank together: its weights are a distributed
    checkpoint (weights/, each rank writing its shards); rank 0 writes the rest."""
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    variables = _named_stably(graph, dict(last.variables), doc)
    together = any(v.is_global for v in variables.values())
    rank = flow.distributed.get_rank() if together else 0
    if rank == 0:
        _remove_stale_temps(path)
    token = _checkpoint._save_token() if together else _local_token()
    tmp = _temp_path(path, "graph", token)
    if rank == 0:
        os.makedirs(tmp)
    if together:
        _checkpoint._barrier()
    weights = "weights" if together else "weights.safetensors"
    try:
        flow.save(variables, os.path.join(tmp, weights))
        if rank == 0:
            _finish(graph, last, doc, weights, tmp, path, token)
    except BaseException:
        if rank == 0:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    if together:
        _checkpoint._barrier()


# A save's folders beside `path` (named .<path's name>.graph-<token> while written, and
# .<name>.graph-old-<token> holding the earlier save while the new one takes its place), the
# token naming the writing process's host and pid as _checkpoint._save_token does.
_TEMP = re.compile(r"\.(.+)\.(graph|graph-old)-[0-9a-f]{16}-([0-9a-f]{8})-([0-9]+)")


def _local_token():
    return f"{secrets.randbits(64):016x}-{_st.HOST}-{os.getpid()}"


def _temp_path(path, kind, token):
    directory, base = os.path.split(path)
    return os.path.join(directory, f".{base}.{kind}-{token}")


def _remove_stale_temps(path):
    """Removes the folders that saves of `path` killed on this host left; where one was killed
    between moving the earlier save aside and putting its own in place, the earlier save goes
    back to `path` first."""
    directory, base = os.path.split(path)
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        m = _TEMP.fullmatch(name)
        if not m or m[1] != base or not _st.writer_gone(m[3], m[4]):
            continue
        stale = os.path.join(directory, name)
        previous = os.path.join(stale, "previous")
        try:
            if m[2] == "graph-old" and os.path.isdir(previous) and not os.path.exists(path):
                os.rename(previous, path)
        except OSError:  # another process put a save there meanwhile: it stands
            pass
        shutil.rmtree(stale, ignore_errors=True)


def _finish(graph, last, doc, weights, tmp, path, token):
    with open(os.path.join(tmp, "graph.json"), "w") as f:
        json.dump(doc, f, indent=1)
    manifest = {
        "format": "oneflowlike-graph",
        "format_version": _C.CompiledGraph.format_version,
        "graph": type(graph).__name__,
        "inputs": last.signature,
        "batch": doc.get("batch", 0),
        "training": bool(graph._optimizers),
        "files": {"graph": "graph.json", "weights": weights},
    }
    with open(os.path.join(tmp, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    old = None
    if os.path.exists(path):
        old = _temp_path(path, "graph-old", token)
        os.makedirs(old)
        os.rename(path, os.path.join(old, "previous"))
    os.rename(tmp, path)
    if old:
        shutil.rmtree(old)
