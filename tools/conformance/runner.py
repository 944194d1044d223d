"""Running the drivers over their databases, with progress, and summarising the results."""

import sys
import time

from . import lists, modules, ops, optims

AREAS = ("ops", "modules", "optims")
STATUSES = ("pass", "wrong", "raises", "skip")


def database(area):
    return {"ops": lists.op_db, "modules": modules.module_db, "optims": optims.optim_db}[area]()


def _driver(area):
    return {"ops": ops, "modules": modules, "optims": optims}[area]


def run_area(area, names=None, only=None, progress=False, **kw):
    """Results of the entries named (all when empty). `only`: {entry key: case ids} to run just
    those cases (the baseline), entries absent from it are not run."""
    drv = _driver(area)
    entries = drv.select(database(area), names or [])
    out, seen = [], {}
    start = time.time()
    for n, entry in enumerate(entries):
        key = drv.entry_key(entry)
        # Two database entries with one name (rare) keep both: the second gets a suffix.
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            key = f"{key}#{seen[key]}"
        if only is not None and key not in only:
            continue
        t0 = time.time()
        try:
            res = drv.run_entry(entry, only=None if only is None else set(only[key]), **kw)
        except Exception as e:  # a driver bug must not end the sweep
            res = {"key": key, "name": key, "target": "", "cases": {}}
            res["reason"] = f"driver error: {type(e).__name__}: {e}"
        res["key"] = key
        res["seconds"] = round(time.time() - t0, 3)
        out.append(res)
        if progress:
            print(
                f"\r[{area}] {n + 1}/{len(entries)} {time.time() - start:5.0f}s {key[:40]:40}",
                end="",
                file=sys.stderr,
                flush=True,
            )
    if progress:
        print(file=sys.stderr)
    return out


def counts(res, kind=None):
    c = dict.fromkeys(STATUSES, 0)
    for cid, (status, _) in res["cases"].items():
        if kind is None or cid.split(":", 1)[1] == kind:
            c[status] += 1
    return c


def verdict(res):
    """`pass` (every case run passes, skips aside), `partial`, `fail` (none passes), or why the
    entry did not run (`missing`, `no samples`)."""
    if res["reason"] == "missing":
        return "missing"
    c = counts(res)
    if not c["pass"] and not c["wrong"] and not c["raises"]:
        return "no samples"
    if c["pass"] and not c["wrong"] and not c["raises"]:
        return "pass"
    return "partial" if c["pass"] else "fail"


def first_failure(res):
    for cid, (status, msg) in res["cases"].items():
        if status in ("wrong", "raises"):
            return f"{cid} {status}: {msg}"
    return res["reason"] if res["reason"] and res["reason"] != "missing" else ""
