"""The Markdown report (docs/torch-conformance.md) and the baseline of claimed cases that CI runs
again (tools/conformance_baseline.json)."""

import collections
import json

from . import lists, ops, runner


def _cell(text, limit=110):
    """Markdown-safe table cell: no pipes, no raw HTML, no line breaks."""
    text = " ".join(str(text).split())
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    for a, b in (("|", "¦"), ("<", "&lt;"), (">", "&gt;"), ("`", "'"), ("*", "\\*")):
        text = text.replace(a, b)
    return text


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _pn(c):
    """`passed/run`, with skipped cases after a `+` (run = pass + wrong + raises)."""
    run = c["pass"] + c["wrong"] + c["raises"]
    if not run and not c["skip"]:
        return ""
    return f"{c['pass']}/{run}" + (f" +{c['skip']}s" if c["skip"] else "")


def lists_table(measured, torch_version):
    rows = [(name, f"{len(have)} / {len(names)}") for name, (names, have) in measured.items()]
    return _table([f"list (PyTorch {torch_version})", "oneflowlike"], rows)


def lists_detail(measured):
    out = []
    for name, (names, have) in measured.items():
        missing = sorted(set(names) - set(have))
        groups = {name: missing}
        if name == "OpInfo names":
            groups = collections.defaultdict(list)
            for n in missing:
                groups[f"OpInfo names, {lists.opinfo_area(n)}"].append(n)
        for title, group in groups.items():
            out.append(f"**{title}**: {len(group)} missing")
            if group:
                out += ["", ", ".join(f"`{n}`" for n in group)]
            out.append("")
    return "\n".join(out)


def opinfo_areas(measured, results):
    names, have = measured["OpInfo names"]
    have = set(have)
    by_area = collections.defaultdict(lambda: collections.Counter())
    for n in names:
        a = lists.opinfo_area(n)
        by_area[a]["names"] += 1
        by_area[a]["present"] += n in have
    per_name = collections.defaultdict(collections.Counter)
    for r in results:
        if r["name"].startswith("_"):
            continue
        per_name[r["name"]].update(runner.counts(r))
        a = lists.opinfo_area(r["name"])
        v = runner.verdict(r)
        if v not in ("missing", "no samples"):
            by_area[a]["entries run"] += 1
            by_area[a]["entries passing"] += v == "pass"
        for s, k in runner.counts(r).items():
            by_area[a][s] += k
    for name, c in per_name.items():
        run = c["pass"] + c["wrong"] + c["raises"]
        by_area[lists.opinfo_area(name)]["names 95"] += bool(run) and c["pass"] >= 0.95 * run
    rows = []
    total = collections.Counter()
    for a in sorted(by_area, key=lambda a: -by_area[a]["names"]):
        c = by_area[a]
        total.update(c)
        rows.append(_area_row(a, c))
    rows.append(_area_row("**all**", total))
    header = ["area", "names present", "names, 95% of cases pass", "entries passing / run"]
    header += ["cases pass", "wrong", "raises"]
    return _table(header + ["skip"], rows)


def _area_row(a, c):
    return (
        a,
        f"{c['present']} / {c['names']}",
        f"{c['names 95']} / {c['names']}",
        f"{c['entries passing']} / {c['entries run']}",
        c["pass"],
        c["wrong"],
        c["raises"],
        c["skip"],
    )


def entries_table(results, kinds):
    rows, idle = [], []
    for r in results:
        v = runner.verdict(r)
        if v == "missing":
            continue
        if v == "no samples":
            idle.append((f"`{r['key']}`", _cell(r["reason"] or "every sample skipped")))
            continue
        cells = [_pn(runner.counts(r, k)) for k in kinds]
        rows.append([f"`{r['key']}`", v] + cells + [_cell(runner.first_failure(r))])
    text = _table(["entry", "verdict", *kinds, "first failure"], rows)
    if idle:
        text += "\n\nEntries present that ran no case:\n\n" + _table(["entry", "why"], idle)
    return text


def summary_line(results):
    v = collections.Counter(runner.verdict(r) for r in results)
    c = collections.Counter()
    for r in results:
        c.update(runner.counts(r))
    run = c["pass"] + c["wrong"] + c["raises"]
    share = f" ({100 * c['pass'] / run:.1f}%)" if run else ""
    return (
        f"{len(results)} entries: {v['pass']} pass every case, {v['partial']} partly, "
        f"{v['fail']} fail every case, {v['no samples']} ran no case, {v['missing']} missing. "
        f"Cases: {c['pass']} of {run} pass{share}, {c['wrong']} wrong, {c['raises']} raise, "
        f"{c['skip']} skipped."
    )


def missing_line(results):
    miss = [r["key"] for r in results if runner.verdict(r) == "missing"]
    return "Missing: " + (", ".join(f"`{k}`" for k in miss) if miss else "none") + "."


def markdown(torch_version, measured=None, results=None):
    """The report. `results`: {area: [entry results]} for the areas that were run."""
    results = results or {}
    out = []
    if measured is not None:
        out += ["## The lists", "", lists_table(measured, torch_version), ""]
    if "ops" in results and measured is not None:
        out += ["## OpInfo by area", "", opinfo_areas(measured, results["ops"]), ""]
    titles = {
        "ops": ("OpInfo entries (op_db)", ops.KINDS),
        "modules": ("Modules (module_db)", ("fwd", "grad")),
        "optims": ("Optimizers (optim_db)", ("steps",)),
    }
    for area in runner.AREAS:
        if area not in results:
            continue
        title, kinds = titles[area]
        out += [f"## {title}", "", summary_line(results[area]), ""]
        out += [entries_table(results[area], kinds), "", missing_line(results[area]), ""]
    if measured is not None:
        out += ["## Missing names per list", "", lists_detail(measured)]
    return "\n".join(out).rstrip() + "\n"


# Samples per entry that CI reruns: the first few of each claimed entry keep the guard within its
# time budget (max_pool2d alone has 720 samples); `--check-baseline --full` reruns every one.
CI_SAMPLES = 4


def baseline_from(results, torch_version, command):
    """Claim every entry whose cases all pass (skips aside). Per claimed entry: `ci`, the passing
    cases of its first CI_SAMPLES samples (CI reruns them: each must pass), and `passes`, the
    passing count of the full run. Entries that pass partly are recorded with `passes` only."""
    base = {"torch": torch_version, "command": command, "ci_samples": CI_SAMPLES}
    base["claimed"] = {area: {} for area in results}
    base["partial"] = {area: {} for area in results}
    for area, res in results.items():
        for r in res:
            passing = [c for c, (s, _) in r["cases"].items() if s == "pass"]
            v = runner.verdict(r)
            if v == "pass":
                ci = [c for c in passing if _case_order(c)[0] < CI_SAMPLES]
                base["claimed"][area][r["key"]] = {"ci": encode(ci), "passes": len(passing)}
            elif v == "partial":
                base["partial"][area][r["key"]] = {"passes": len(passing)}
    return base


def _case_order(cid):
    i, kind = cid.split(":", 1)
    return (int(i), kind)


def encode(case_ids):
    """{kind: "0-3,5"}: the sample indices of each kind as ranges (a compact baseline)."""
    by_kind = {}
    for cid in case_ids:
        i, kind = _case_order(cid)
        by_kind.setdefault(kind, []).append(i)
    out = {}
    for kind, idx in sorted(by_kind.items()):
        idx.sort()
        runs, start = [], idx[0]
        for a, b in zip(idx, idx[1:] + [None]):
            if b != a + 1:
                runs.append(str(start) if start == a else f"{start}-{a}")
                start = b
        out[kind] = ",".join(runs)
    return out


def decode(by_kind):
    ids = []
    for kind, ranges in by_kind.items():
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            ids += [f"{i}:{kind}" for i in range(int(lo), int(hi or lo) + 1)]
    return ids


def write_baseline(path, base):
    with open(path, "w") as f:
        json.dump(base, f, indent=1, sort_keys=True)
        f.write("\n")


def load_baseline(path):
    with open(path) as f:
        return json.load(f)


def wanted(base, area, full=False, include_partial=False):
    """{entry key: what must hold}: a list of case ids that must each pass (CI), or, with `full`,
    None: every case is run, none may be wrong or raise, and at least `passes` pass."""
    want = {}
    for key, rec in base["claimed"].get(area, {}).items():
        want[key] = None if full else decode(rec["ci"])
    if include_partial:
        want.update({key: None for key in base["partial"].get(area, {})})
    return want


def regressions(base, area, want, results):
    """[(entry, case, status, message)] for every claim that no longer holds."""
    got = {r["key"]: r for r in results}
    records = {**base["partial"].get(area, {}), **base["claimed"].get(area, {})}
    bad = []
    for key, case_ids in want.items():
        r = got.get(key)
        if r is None:
            bad.append((key, "*", "gone", "the entry is no longer in the database"))
            continue
        if not r["cases"] and r["reason"]:
            bad.append((key, "*", "not run", r["reason"]))
            continue
        if case_ids is not None:
            for cid in case_ids:
                status, msg = r["cases"].get(cid, ("not run", "the case no longer exists"))
                if status != "pass":
                    bad.append((key, cid, status, msg))
            continue
        claimed = key in base["claimed"].get(area, {})
        for cid, (status, msg) in r["cases"].items():
            if claimed and status in ("wrong", "raises"):
                bad.append((key, cid, status, msg))
        passes = sum(s == "pass" for s, _ in r["cases"].values())
        if passes < records[key]["passes"]:
            bad.append((key, "*", "fewer", f"{passes} cases pass, {records[key]['passes']} did"))
    return bad
