"""Shared timing helpers for the benchmarks: best-of-repeats wall time per call, and running
each library's measurements in its own child process (so no library's idle worker threads
compete with another's for the cores)."""

import json
import statistics
import subprocess
import sys
import time


def bench(fn, min_time=0.2, repeats=5):
    """Seconds per call of fn(): the best of `repeats` runs of enough calls to last min_time."""
    fn()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time / repeats or n >= 1 << 20:
            break
        n *= 2
    best = dt / n
    for _ in range(repeats - 1):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def between_ops(graphs, call):
    """The share of a graph call's time its executor spends between nodes (outside every node's
    dispatch and kernel): `call()` once with each of `graphs` timing its nodes
    (config.enable_timeline), then for each graph that ran, 1 - (time inside its compute
    thread's nodes) / (its first node's start to its last node's end); the median over them.
    The timeline's own clock reads count as between: an upper bound."""
    for g in graphs:
        g.config.enable_timeline(True)
    try:
        call()
    finally:
        for g in graphs:
            g.config.enable_timeline(False)
    shares = []
    for g in graphs:
        spans = [s for s in (g.timeline or []) if s["thread"] == "compute"]
        if len(spans) < 2:
            continue
        inside = sum(s["end"] - s["start"] for s in spans)
        whole = max(s["end"] for s in spans) - min(s["start"] for s in spans)
        shares.append(1 - inside / whole)
    return statistics.median(shares) if shares else None


def fmt_time(s):
    if s < 1e-6:
        return f"{s * 1e9:7.1f} ns"
    if s < 1e-3:
        return f"{s * 1e6:7.1f} us"
    if s < 1:
        return f"{s * 1e3:7.2f} ms"
    return f"{s:7.2f} s "


def report(rows, peers, spreads=None):
    """Prints one line per case: our time, each peer's time, and peer/ours (>1: we are faster);
    with spreads ({(case, peer): (lo, hi)}), the range of that ratio over repeated rounds."""
    header = f"{'case':44s} {'oneflowlike':>12s}"
    for p in peers:
        header += f" {p:>12s} {'x vs ' + p:>10s}" + (f" {'range':>11s}" if spreads else "")
    print(header)
    print("-" * len(header))
    for name, ours, others in rows:
        line = f"{name:44s} {fmt_time(ours):>12s}"
        for p in peers:
            t = others.get(p)
            line += f" {fmt_time(t) if t else '-':>12s} {f'{t / ours:9.2f}x' if t else '-':>10s}"
            if spreads:
                lo, hi = spreads.get((name, p), (None, None))
                line += f" {f'{lo:.2f}-{hi:.2f}' if lo else '-':>11s}"
        print(line)


def run_child(script, lib, extra_args, python=None):
    """Runs `script --lib lib` in a fresh interpreter (`python`, default this one); returns its
    JSON dict of case -> seconds."""
    cmd = [python or sys.executable, script, "--lib", lib, *extra_args]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])
