"""MkDocs hook: the op reference page (ops.md), generated from the registry's signatures.

Every public function and Tensor method of an op is bound from the schema its row carries
(core/op_schema.h); this page prints the same schemas, so it cannot drift from the code. It
imports the built package: the docs build runs after scripts/build.sh."""

from mkdocs.structure.files import File


def _page():
    from oneflowlike import _C

    rows = {}
    for s in _C.op_signatures():
        if not (s["function"] or s["method"]):
            continue  # the package's own (fused optimizer updates)
        name = s["schema"].split("(", 1)[0]
        where = " and ".join(
            w
            for w, on in (("`flow.%s`" % name, s["function"]), ("`Tensor.%s`" % name, s["method"]))
            if on
        )
        rows.setdefault(name, []).append((s["schema"], where, s["op"], s["doc"] or ""))
    lines = [
        "# Op reference",
        "",
        "Generated at docs build time from the op registry (`_C.op_signatures()`): each op's row",
        "carries its signatures in PyTorch's schema spelling, and Python binds its functions and",
        "`Tensor` methods from them (`help(flow.cumsum)` prints the same text). `Tensor|Number`",
        "takes a tensor or a Python number; `T?` also takes None; parameters after `*` are",
        "keyword-only; several signatures under one name are overloads, tried in order.",
        "",
        f"{len(rows)} names, {sum(len(v) for v in rows.values())} signatures.",
        "",
        "| Name | Signature | Bound as | Op |",
        "|---|---|---|---|",
    ]
    for name in sorted(rows):
        for schema, where, op, doc in rows[name]:
            text = schema.replace("|", "\\|")
            note = f"<br>{doc}" if doc else ""
            lines.append(f"| {name} | `{text}`{note} | {where} | `{op}` |")
    return "\n".join(lines) + "\n"


def on_files(files, config):
    files.append(File.generated(config, "ops.md", content=_page()))
    return files
