"""oneflowlike checked against PyTorch's own lists and test databases (docs/torch-conformance.md).

    python3 tools/torch_conformance.py --lists [--detail]
    python3 tools/torch_conformance.py --ops [NAME ...] [--detail]      # OpInfo samples
    python3 tools/torch_conformance.py --modules [NAME ...] [--detail]  # ModuleInfo inputs
    python3 tools/torch_conformance.py --optims [NAME ...] [--detail]   # OptimizerInfo inputs
    python3 tools/torch_conformance.py --report docs/torch-conformance.md   # all of it
    python3 tools/torch_conformance.py --update-baseline   # claim what passes now
    python3 tools/torch_conformance.py --check-baseline    # what CI runs

NAME is an OpInfo name (`add`, `nn.functional.relu`) or entry key (`max[binary]`), a ModuleInfo
name (`nn.Linear`) or class name, an optimizer class name. The rules (which names count, how a
name resolves, what a case compares, the tolerances) are in tools/conformance/."""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from conformance import lists, report, runner  # noqa: E402

DETAIL_CASES = 12  # failing cases printed per entry
BASELINE = os.path.join(HERE, "conformance_baseline.json")
DOC_HEADER = """# PyTorch conformance

How much of PyTorch's surface oneflowlike has, and how much of it PyTorch's own test databases
accept. Produced by

    {command}

against PyTorch {torch} on CPU; the rules (which names count, how a name resolves to ours, what
a case compares, tolerances) are in [the method](#method) below and in `tools/conformance/`.
The figures grow as modules, functions and optimizers land; rerun the command to refresh them.

"""
METHOD = """
## Method

**The lists.** nn modules: `torch.nn.modules.__all__`, present when `flow.nn.<name>` exists.
nn.functional: the callables of `dir(torch.nn.functional)` that are not classes or modules, do
not start with `_`, and are not helpers imported from elsewhere (`Optional`,
`handle_torch_function`, `boolean_dispatch`, `has_torch_function*`) or the argument checker
`assert_int_or_pair`. Optimizers: the classes of `torch.optim.__all__` that subclass
`Optimizer` (itself included). lr schedulers: `torch.optim.lr_scheduler.__all__`. OpInfo names:
`{op.name for op in op_db}` less the private ones (a leading `_`). An OpInfo name resolves to
`flow.<name>` (so `nn.functional.x`, `linalg.x`, `special.x`, `fft.x`, `masked.x`,
`signal.windows.x` look in those namespaces; `torch.x` drops the prefix), and a plain name that
PyTorch has only as a Tensor method (`expand`, `contiguous`, `T`) to `flow.Tensor.<name>`.

**OpInfo cases.** For every entry present, `op.sample_inputs("cpu", dtype)` in float32 and in
float64 (seeded, so the samples are the same each run); every tensor in `sample.input`,
`sample.args` and `sample.kwargs` (nested too) goes to oneflowlike through numpy; `torch.dtype`
and torch functions passed as arguments become ours. The op is called as the database calls it:
the name-resolved function, or the database's lambda with `torch` rebound to `oneflowlike`.
Cases, per sample: `f32` and `f64` compare outputs (structure, shape, dtype, values: rtol 1e-4,
atol 1e-5 in float32; 1e-7 both in float64); `grad32` and `grad64` (entries that support
autograd in that dtype) pull one random cotangent per differentiable output, the same for both,
back to every input that requires grad (rtol 1e-3, atol 1e-4 in float32; 1e-6 and 1e-7 in
float64); a forward that fails fails its gradient case too. `inplace32`/`inplace64` run the
in-place variant on a copy of the input, which must end equal to PyTorch's and be returned.
Random ops (dropout, `normal`, ...) compare structure, shapes and dtypes only; decompositions
unique up to sign (`svd`, `linalg.svd`, `linalg.eig`, `linalg.eigh`) compare what the sample's
`output_process_fn_grad` keeps. A case is *pass*, *wrong* (first difference, largest error),
*raises* (ours raised), or *skipped*: a sample with no counterpart here (complex, sparse or
half-precision tensors, a `torch.Generator`, a torch module as an argument) or one PyTorch itself
refuses. Entries without float32/float64 on CPU (integer- or bool-only ops) and CUDA-only
entries run no case: integer and bool samples are later work. "names, 95% of cases pass"
counts the names whose entries together pass at least 95% of the cases they run (the bar issue
44 sets). Cells read `passed/run +Ns` (N skipped).

**Modules.** `module_inputs_func(device="cpu", dtype=float64, requires_grad=True,
training=True)`: both modules built from the constructor input (float64, training mode),
state_dict keys equal, PyTorch's state copied into ours; `fwd` compares the outputs and the
state after the forward (running statistics); `grad` compares the gradients of every parameter
(by name) and input for a random cotangent.

**Optimizers.** Each `optim_inputs_func(device="cpu")` input runs three steps of both on the
same float64 problem (two weight matrices, `sum(tanh(x W1^T) W2^T)^2`); parameters must agree
after each step (rtol 1e-6). `foreach`/`fused`/`capturable`/`differentiable` are passed only
where our constructor takes them.

**CI.** `tools/conformance_baseline.json` claims every entry whose cases all pass;
`tests/python/test_torch_conformance.py` runs the cases of each claimed entry's first 4 samples
again and fails, naming the entry and case, when one no longer passes (`--check-baseline --full`
reruns every sample, `--all` the partly passing entries too). `--update-baseline` rewrites the
file from a full run.
"""


def _torch_version():
    import torch

    return torch.__version__.split("+")[0]


def _print_results(area, results, detail):
    for r in results:
        v = runner.verdict(r)
        c = runner.counts(r)
        line = (
            f"{r['key']:45} {v:10} pass {c['pass']:4} wrong {c['wrong']:3} raises {c['raises']:4}"
        )
        print(line + f" skip {c['skip']:3}  {r.get('target', '')}")
        if detail:
            bad = [(cid, st, msg) for cid, (st, msg) in r["cases"].items() if st != "pass"]
            for cid, status, msg in bad[:DETAIL_CASES]:
                print(f"    {cid:14} {status:6} {msg}")
            if len(bad) > DETAIL_CASES:
                print(f"    ... {len(bad) - DETAIL_CASES} more (--json FILE has them all)")
            if r["reason"] and r["reason"] != "missing":
                print(f"    {r['reason']}")
    print(report.summary_line(results))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--lists", action="store_true", help="count the names of each list we have")
    p.add_argument("--ops", nargs="*", metavar="NAME", help="run OpInfo samples")
    p.add_argument("--modules", nargs="*", metavar="NAME", help="run ModuleInfo inputs")
    p.add_argument("--optims", nargs="*", metavar="NAME", help="run OptimizerInfo inputs")
    p.add_argument("--detail", action="store_true", help="missing names / failing cases")
    p.add_argument("--report", nargs="?", const="-", metavar="FILE", help="write Markdown")
    p.add_argument("--json", metavar="FILE", help="write the raw results")
    p.add_argument("--load", metavar="FILE", help="read results written by --json, not run")
    p.add_argument("--update-baseline", action="store_true", help="rewrite the baseline")
    p.add_argument("--check-baseline", action="store_true", help="rerun the claimed cases")
    p.add_argument("--full", action="store_true", help="with --check-baseline: every sample")
    p.add_argument("--all", action="store_true", help="with --check-baseline: partial too")
    p.add_argument("--baseline", default=BASELINE, help="baseline file (%(default)s)")
    p.add_argument("--max-samples", type=int, default=None, help="OpInfo samples per dtype")
    p.add_argument("--timeout", type=float, default=20, help="seconds per case")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    a = p.parse_args(argv)

    chosen = {k: getattr(a, k) for k in runner.AREAS if getattr(a, k) is not None}
    if (a.report or a.update_baseline) and not chosen:
        chosen = {k: [] for k in runner.AREAS}
    if a.check_baseline:
        return _check(a, chosen or {k: [] for k in runner.AREAS})
    if not (a.lists or chosen or a.report):
        p.print_help()
        return 2
    version = _torch_version()
    measured = None
    if a.lists or a.report:
        measured = lists.measure_lists()
        print(report.lists_table(measured, version))
        if a.detail:
            print()
            print(report.lists_detail(measured))
    results = {}
    if a.load:
        with open(a.load) as f:
            loaded = json.load(f)
        chosen = {}
    for area, names in chosen.items():
        kw = {"timeout": a.timeout}
        if area == "ops":
            kw["max_samples"] = a.max_samples
        results[area] = runner.run_area(area, names, progress=not a.quiet, **kw)
        if not a.report or a.report != "-":
            print(f"\n## {area}")
            _print_results(area, results[area], a.detail)
    if a.load:
        results = {k: v for k, v in loaded.items() if k in runner.AREAS}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    command = "python3 tools/torch_conformance.py " + " ".join(argv or sys.argv[1:])
    if a.report:
        text = report.markdown(version, measured, results)
        if a.report == "-":
            print(text)
        else:
            header = DOC_HEADER.format(command=command.strip(), torch=version)
            with open(a.report, "w") as f:
                f.write(header + text + METHOD)
    if a.update_baseline:
        if any(names for names in chosen.values()) or a.max_samples:
            print("--update-baseline needs the full run (no names, no --max-samples)")
            return 2
        report.write_baseline(a.baseline, report.baseline_from(results, version, command))
        print(f"wrote {a.baseline}")
    return 0


def _check(a, chosen):
    base = report.load_baseline(a.baseline)
    failed = 0
    for area in chosen:
        want = report.wanted(base, area, full=a.full, include_partial=a.all)
        only = {k: v for k, v in want.items() if v is not None}
        results = runner.run_area(area, list(want), only=only or None, progress=not a.quiet)
        bad = report.regressions(base, area, want, results)
        print(f"{area}: {len(want)} entries, {len(bad)} regressions")
        for key, cid, status, msg in bad:
            print(f"    {key} {cid} {status}: {msg}")
        failed += len(bad)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
