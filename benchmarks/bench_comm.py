"""Bus bandwidth and latency of our CPU collectives against Gloo called directly, in one run.

For each rank count (2 and 4 local processes by default) and each repeat, it runs

  ours: python -m oneflowlike.distributed.launch --nproc_per_node N benchmarks/comm_worker.py
  raw:  N processes of raw_gloo_bench with RANK/WORLD_SIZE set (none of our code involved)

with the same sizes (1 KB .. 64 MB, powers of 4) and call counts. Each side times a case in
rounds (the best round's mean per call, on the slowest rank); the best over repeats is kept, and
a table printed. Bus bandwidth follows nccl-tests: algbw = bytes / time
times 2(n-1)/n for all_reduce and (n-1)/n for all_gather, reduce_scatter and all_to_all, where
`bytes` is the whole buffer (the gathered output for all_gather, the reduced input for
reduce_scatter). ratio = our busbw / raw busbw (1.00 = no overhead). The raw binary is taken from
a CMake build (ONEFLOWLIKE_BUILD_BENCHMARKS=ON) when one is current, else compiled with
`g++ -O2 ... -lgloo` into build/bench/.

A third side, "unchecked", runs ours with OFL_COMM_CHECK=0: the calls without the default check
that the ranks agree on each collective (one allgather of a small header), so the table's
"check" column is that check's cost (unchecked time / checked time; 1.00 = free).

Raw Gloo has no options-style reduce_scatter; its baseline is ReduceScatterHalvingDoubling (the
algorithm class, built once and rerun), which the table names.

    python benchmarks/bench_comm.py [--ranks 2,4] [--repeats 3] [--max-bytes 67108864]
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from oneflowlike.distributed.launch import JOB_ENV_VARS  # noqa: E402

RAW_SRC = ROOT / "benchmarks" / "raw_gloo" / "raw_gloo_bench.cpp"
WORKER = ROOT / "benchmarks" / "comm_worker.py"
OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
JOB_VARS = JOB_ENV_VARS


def bus_factor(op, n):
    return 2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n


def busbw_gbs(op, n, nbytes, seconds):
    return nbytes / seconds * bus_factor(op, n) / 1e9


def raw_binary(rebuild=False):
    """A raw_gloo_bench at least as new as its source: CMake's if current, else g++'s."""
    src_time = RAW_SRC.stat().st_mtime
    if not rebuild:
        for build in sorted((ROOT / "build").glob("*/benchmarks/raw_gloo_bench")):
            if build.stat().st_mtime >= src_time:
                return build
    out = ROOT / "build" / "bench" / "raw_gloo_bench"
    if rebuild or not out.exists() or out.stat().st_mtime < src_time:
        out.parent.mkdir(parents=True, exist_ok=True)
        cxx = os.environ.get("CXX") or shutil.which("g++") or "c++"
        cmd = [cxx, "-O2", "-std=c++17", "-o", str(out), str(RAW_SRC), "-lgloo", "-pthread"]
        print("building the raw Gloo baseline:", " ".join(cmd), file=sys.stderr, flush=True)
        subprocess.run(cmd, check=True)
    return out


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in JOB_VARS}
    env.setdefault("OFL_COMM_TIMEOUT_S", "300")
    env.update(extra)
    return env


def size_args(args):
    out = ["--min-bytes", str(args.min_bytes), "--max-bytes", str(args.max_bytes)]
    out += ["--ops", ",".join(args.ops)]
    if args.iters:
        out += ["--iters", str(args.iters)]
    if args.warmup >= 0:
        out += ["--warmup", str(args.warmup)]
    out += ["--rounds", str(args.rounds)]
    return out


def run_job(cmd, timeout, env=None):
    """Runs one launcher job; returns its JSON lines (rank 0 prints them)."""
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env or clean_env(), capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} exited {p.returncode} after {time.perf_counter() - t0:.1f} s\n"
            f"stdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}"
        )
    rows = []
    for line in p.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            rows.append(json.loads(line))
    return rows


def run_ours(n, args, checked=True):
    launch = [sys.executable, "-m", "oneflowlike.distributed.launch", "--nproc_per_node", str(n)]
    env = clean_env() if checked else clean_env(OFL_COMM_CHECK="0")
    return run_job([*launch, str(WORKER), *size_args(args)], args.timeout, env)


def run_raw(n, binary, args):
    """N plain processes with RANK/WORLD_SIZE set, as the launcher would, but without any of our
    code in the way; they meet through a FileStore in a fresh directory."""
    store = tempfile.mkdtemp(prefix="raw_gloo_store_")
    procs = []
    try:
        for r in range(n):
            env = dict(clean_env(), RANK=str(r), WORLD_SIZE=str(n), LOCAL_RANK=str(r))
            procs.append(
                subprocess.Popen(
                    [str(binary), store, *size_args(args)],
                    env=env,
                    stdout=subprocess.PIPE if r == 0 else subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        out, err = procs[0].communicate(timeout=args.timeout)
        codes = [procs[0].returncode] + [q.wait(timeout=args.timeout) for q in procs[1:]]
        if any(codes):
            errs = "".join(q.stderr.read() for q in procs[1:] if q.stderr)
            raise RuntimeError(f"raw_gloo_bench exit codes {codes}\n{err[-3000:]}{errs[-3000:]}")
        return [json.loads(x) for x in out.splitlines() if x.strip().startswith("{")]
    finally:
        for q in procs:
            if q.poll() is None:
                q.kill()
                q.wait()
        shutil.rmtree(store, ignore_errors=True)


def check_ours():
    """Our side needs the package with the distributed module; say so plainly when it is not."""
    code = "import oneflowlike.distributed, oneflowlike._C as c; assert hasattr(c, 'comm')"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(
            "[bench_comm] the importable oneflowlike has no distributed runtime (rebuild with "
            f"scripts/build.sh, or use --only raw):\n{p.stderr[-2000:]}"
        )


def keep_best(best, rows, who):
    for r in rows:
        key = (r["op"], r["bytes"], r["ranks"])
        cur = best.setdefault(key, {})
        if who not in cur or r["seconds"] < cur[who]["seconds"]:
            cur[who] = r


def fmt_bytes(b):
    for unit, scale in (("MB", 1 << 20), ("KB", 1 << 10)):
        if b >= scale:
            return f"{b / scale:g} {unit}"
    return f"{b} B"


def fmt_us(s):
    return f"{s * 1e6:10.1f}"


def table(best, small_bytes):
    header = (
        f"{'op':15s} {'size':>8s} {'ranks':>5s} {'ours GB/s':>10s} {'gloo GB/s':>10s} "
        f"{'ratio':>6s} {'ours us':>10s} {'gloo us':>10s} {'check':>6s}"
    )
    lines = [header, "-" * len(header)]
    order = sorted(best, key=lambda k: (OPS.index(k[0]) if k[0] in OPS else 99, k[2], k[1]))
    for op, nbytes, n in order:
        cur = best[(op, nbytes, n)]
        ours, raw, unchecked = cur.get("ours"), cur.get("raw"), cur.get("unchecked")
        check = f"{unchecked['seconds'] / ours['seconds']:6.2f}" if ours and unchecked else "     -"
        bw_o = busbw_gbs(op, n, nbytes, ours["seconds"]) if ours else None
        bw_r = busbw_gbs(op, n, nbytes, raw["seconds"]) if raw else None
        ratio = f"{bw_o / bw_r:6.2f}" if bw_o and bw_r else "     -"
        # Latency matters for the small sizes; bandwidth for the large ones. Both are shown.
        lat_o = fmt_us(ours["seconds"]) if ours else "-"
        lat_r = fmt_us(raw["seconds"]) if raw else "-"
        mark = "" if nbytes > small_bytes else "  (latency-bound)"
        lines.append(
            f"{op:15s} {fmt_bytes(nbytes):>8s} {n:5d} "
            f"{f'{bw_o:10.3f}' if bw_o else '-':>10s} {f'{bw_r:10.3f}' if bw_r else '-':>10s} "
            f"{ratio} {lat_o:>10s} {lat_r:>10s} {check}{mark}"
        )
    return "\n".join(lines)


def summary(best, big_bytes):
    """Per (op, ranks): the geometric mean and the worst ratio over sizes >= big_bytes."""
    groups = {}
    for (op, nbytes, n), cur in best.items():
        if nbytes >= big_bytes and "ours" in cur and "raw" in cur:
            ratio = cur["raw"]["seconds"] / cur["ours"]["seconds"]  # = busbw ratio
            groups.setdefault((op, n), []).append(ratio)
    lines = [f"ratio our/raw busbw at >= {fmt_bytes(big_bytes)} (aim: >= 0.95)"]
    for (op, n), ratios in sorted(groups.items(), key=lambda kv: (OPS.index(kv[0][0]), kv[0][1])):
        gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        lines.append(f"  {op:15s} ranks={n}: geomean {gm:5.2f}, worst {min(ratios):5.2f}")
    checks = {}
    for (op, nbytes, n), cur in best.items():
        if "ours" in cur and "unchecked" in cur:
            checks.setdefault(nbytes <= 64 << 10, []).append(
                cur["unchecked"]["seconds"] / cur["ours"]["seconds"]
            )
    for small, ratios in sorted(checks.items()):
        gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        lines.append(
            f"cost of the call check (unchecked / checked time), {'<=' if small else '>'} 64 KB: "
            f"geomean {gm:5.2f}, worst {min(ratios):5.2f}"
        )
    impls = sorted({cur["raw"]["impl"] for cur in best.values() if "raw" in cur})
    lines.append("raw Gloo calls: " + ", ".join(impls))
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--ranks", default="2,4", help="comma-separated local rank counts")
    p.add_argument("--min-bytes", type=int, default=1 << 10)
    p.add_argument("--max-bytes", type=int, default=64 << 20)
    p.add_argument("--ops", default=",".join(OPS))
    p.add_argument("--repeats", type=int, default=2, help="alternating runs; the best is kept")
    p.add_argument("--iters", type=int, default=0, help="timed calls per case (0: per size)")
    p.add_argument("--warmup", type=int, default=-1, help="untimed calls per case (-1: per size)")
    p.add_argument("--rounds", type=int, default=5, help="timed rounds per case; the best counts")
    p.add_argument("--timeout", type=float, default=1800, help="seconds per launcher job")
    p.add_argument("--rebuild-raw", action="store_true", help="recompile the raw Gloo binary")
    p.add_argument("--json", default=None, help="also write every best row to this file")
    p.add_argument(
        "--only", choices=("ours", "unchecked", "raw"), default=None, help="run one side only"
    )
    args = p.parse_args()
    args.ops = [o for o in args.ops.split(",") if o]

    if args.only != "raw":
        check_ours()
    binary = raw_binary(args.rebuild_raw) if args.only in (None, "raw") else None
    best = {}
    for n in [int(x) for x in args.ranks.split(",") if x]:
        for rep in range(args.repeats):
            # Alternate the order so drift on a shared machine does not favour one side.
            runs = [
                ("ours", lambda: run_ours(n, args)),
                ("unchecked", lambda: run_ours(n, args, checked=False)),
                ("raw", lambda: run_raw(n, binary, args)),
            ]
            if rep % 2:
                runs.reverse()
            runs = [(who, run) for who, run in runs if args.only in (None, who)]
            for who, run in runs:
                t0 = time.perf_counter()
                keep_best(best, run(), who)
                print(
                    f"[bench_comm] ranks={n} repeat={rep + 1}/{args.repeats} {who}: "
                    f"{time.perf_counter() - t0:.1f} s",
                    file=sys.stderr,
                    flush=True,
                )

    print(f"machine: {os.cpu_count()} logical CPUs; raw baseline: {binary}")
    print(table(best, small_bytes=64 << 10))
    print()
    print(summary(best, big_bytes=1 << 20))
    if args.json:
        rows = [dict(r, who=who) for cur in best.values() for who, r in cur.items()]
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
