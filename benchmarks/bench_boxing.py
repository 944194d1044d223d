"""Boxing against the collectives it maps to, and plan-cache latency, in one run.

For each rank count (2 and 4 local processes by default) and each repeat, it runs

  python -m oneflowlike.distributed.launch --nproc_per_node N benchmarks/boxing_worker.py

which times, on float32 CPU global tensors of 4, 16 and 64 MB logical ((rows, 1024)), each
reshard (x.to_global(sbp=...)) against the raw collective of flow.distributed.world() it runs,
called on the same shards in the same rounds:

  S(0) -> B      all_gather_v        P(sum) -> B     all_reduce (in place; reshard clones)
  P(sum) -> S(0) reduce_scatter_v    S(0) -> S(1)    all_to_all_v (of the shard packed once)

Both sides run with OFL_COMM_CHECK=0: reshard's collectives are planned and skip the call check
anyway (comm::PlannedCollectives), so the raw side is Gloo's collective alone. The best over
repeats is kept. Bus bandwidth follows nccl-tests (bench_comm.py): bytes / time
times 2(n-1)/n for all_reduce and (n-1)/n for the others, `bytes` the logical tensor. ratio =
raw time / reshard time (= reshard busbw / raw busbw; 1.00 = no overhead; aim >= 0.9).

Then the plan-cache figures: benchmarks/plan_cache_bench (PlanCache::get on one key 1e5 times:
ns per hit; and on distinct keys: ns per miss, i.e. planning). It is taken from a CMake build
(ONEFLOWLIKE_BUILD_BENCHMARKS=ON) when one is current, else compiled with g++ into build/bench/
against build/py/liboneflowlike.so (or the installed package's), with an rpath.

    python benchmarks/bench_boxing.py [--ranks 2,4] [--repeats 2] [--sizes 4194304,...]
"""

import argparse
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_comm import busbw_gbs, check_ours, clean_env, fmt_bytes, run_job  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
WORKER = ROOT / "benchmarks" / "boxing_worker.py"
CACHE_SRC = ROOT / "benchmarks" / "plan_cache_bench.cpp"
CASES = ("S(0)->B", "P(sum)->B", "P(sum)->S(0)", "S(0)->S(1)")
RAW_OP = {
    "all_gather_v": "all_gather",
    "all_reduce": "all_reduce",
    "reduce_scatter_v": "reduce_scatter",
    "all_to_all_v": "all_to_all",
}


def run_boxing(n, args):
    launch = [sys.executable, "-m", "oneflowlike.distributed.launch", "--nproc_per_node", str(n)]
    worker = [str(WORKER), "--sizes", args.sizes, "--rounds", str(args.rounds)]
    if args.iters:
        worker += ["--iters", str(args.iters)]
    # Reshard's collectives are planned and skip the call check; the raw side's would not.
    return run_job([*launch, *worker], args.timeout, env=clean_env(OFL_COMM_CHECK="0"))


def keep_best(best, rows):
    for r in rows:
        cur = best.setdefault((r["case"], r["ranks"], r["bytes"]), dict(r))
        for side in ("reshard_s", "raw_s"):
            cur[side] = min(cur[side], r[side])


def table(best):
    header = (
        f"{'reshard':13s} {'raw collective':17s} {'size':>6s} {'ranks':>5s} "
        f"{'reshard ms':>10s} {'raw ms':>8s} {'reshard GB/s':>12s} {'raw GB/s':>9s} {'ratio':>6s}"
    )
    lines = [header, "-" * len(header)]
    order = sorted(best, key=lambda k: (CASES.index(k[0]) if k[0] in CASES else 99, k[1], k[2]))
    for key in order:
        r = best[key]
        op, n, nbytes = RAW_OP[r["raw"]], r["ranks"], r["bytes"]
        bw_b = busbw_gbs(op, n, nbytes, r["reshard_s"])
        bw_r = busbw_gbs(op, n, nbytes, r["raw_s"])
        lines.append(
            f"{r['case']:13s} {r['raw']:17s} {fmt_bytes(nbytes):>6s} {n:5d} "
            f"{r['reshard_s'] * 1e3:10.2f} {r['raw_s'] * 1e3:8.2f} {bw_b:12.3f} {bw_r:9.3f} "
            f"{r['raw_s'] / r['reshard_s']:6.2f}"
        )
    return "\n".join(lines)


def summary(best):
    groups = {}
    for (case, n, _), r in best.items():
        groups.setdefault((case, n), []).append(r["raw_s"] / r["reshard_s"])
    lines = ["ratio raw/reshard time (aim: >= 0.9)"]
    for (case, n), ratios in sorted(
        groups.items(), key=lambda kv: (CASES.index(kv[0][0]), kv[0][1])
    ):
        gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        lines.append(f"  {case:13s} ranks={n}: geomean {gm:5.2f}, worst {min(ratios):5.2f}")
    plans = sorted({(r["case"], r["ranks"], r["plan"].split(" group")[0]) for r in best.values()})
    lines.append("reshard ran: " + ", ".join(f"{c} x{n}: {p}" for c, n, p in plans))
    return "\n".join(lines)


def oneflowlike_lib():
    """build/py's liboneflowlike.so, else the installed package's."""
    built = ROOT / "build" / "py" / "liboneflowlike.so"
    if built.exists():
        return built
    spec = importlib.util.find_spec("oneflowlike")
    for d in spec.submodule_search_locations if spec else []:
        if (Path(d) / "liboneflowlike.so").exists():
            return Path(d) / "liboneflowlike.so"
    sys.exit("[bench_boxing] no liboneflowlike.so in build/py or the installed package")


def plan_cache_binary(rebuild=False):
    """plan_cache_bench at least as new as its source: CMake's if current, else g++'s."""
    src_time = CACHE_SRC.stat().st_mtime
    if not rebuild:
        for build in sorted((ROOT / "build").glob("*/benchmarks/plan_cache_bench")):
            if build.stat().st_mtime >= src_time:
                return build
    lib = oneflowlike_lib()
    out = ROOT / "build" / "bench" / "plan_cache_bench"
    newest = max(src_time, lib.stat().st_mtime)
    if rebuild or not out.exists() or out.stat().st_mtime < newest:
        out.parent.mkdir(parents=True, exist_ok=True)
        cxx = os.environ.get("CXX") or shutil.which("g++") or "c++"
        cmd = [cxx, "-O2", "-std=c++20", f"-I{ROOT}", "-o", str(out), str(CACHE_SRC)]
        cmd += [str(lib), f"-Wl,-rpath,{lib.parent}", "-pthread"]
        print("building plan_cache_bench:", " ".join(cmd), file=sys.stderr, flush=True)
        subprocess.run(cmd, check=True)
    return out


def plan_cache(binary, args):
    cmd = [str(binary), "--hits", str(args.cache_hits), "--misses", str(args.cache_misses)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=args.timeout)
    rows = [json.loads(x) for x in out.stdout.splitlines() if x.strip().startswith("{")]
    lines = [f"plan cache (PlanCache::get, {binary}):"]
    lines.append(f"  {'key':26s} {'ns/hit':>8s} {'ns/miss':>9s} {'steps':>5s}")
    by_case = {}
    for r in rows:
        by_case.setdefault(r["case"], {})[r["kind"]] = r
    for case, kinds in by_case.items():
        hit, miss = kinds.get("hit"), kinds.get("miss")
        lines.append(
            f"  {case:26s} {hit['ns'] if hit else float('nan'):8.1f} "
            f"{miss['ns'] if miss else float('nan'):9.1f} {(hit or miss)['steps']:5d}"
        )
    lines.append(
        f"  hits: the same key {args.cache_hits} times (best of 5 rounds); "
        f"misses: {args.cache_misses} distinct shapes"
    )
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--ranks", default="2,4", help="comma-separated local rank counts")
    p.add_argument("--sizes", default=f"{4 << 20},{16 << 20},{64 << 20}", help="logical bytes")
    p.add_argument("--repeats", type=int, default=2, help="launcher jobs per rank count; best kept")
    p.add_argument("--iters", type=int, default=0, help="timed calls per side (0: per size)")
    p.add_argument("--rounds", type=int, default=8, help="timed rounds per case; the best counts")
    p.add_argument("--timeout", type=float, default=600, help="seconds per launcher job")
    p.add_argument("--cache-hits", type=int, default=100000)
    p.add_argument("--cache-misses", type=int, default=10000)
    p.add_argument("--rebuild", action="store_true", help="recompile plan_cache_bench")
    p.add_argument("--skip-cache", action="store_true", help="no plan-cache figures")
    p.add_argument("--json", default=None, help="also write every best row to this file")
    args = p.parse_args()

    check_ours()
    binary = None if args.skip_cache else plan_cache_binary(args.rebuild)
    best = {}
    for n in [int(x) for x in args.ranks.split(",") if x]:
        for rep in range(args.repeats):
            t0 = time.perf_counter()
            keep_best(best, run_boxing(n, args))
            print(
                f"[bench_boxing] ranks={n} repeat={rep + 1}/{args.repeats}: "
                f"{time.perf_counter() - t0:.1f} s",
                file=sys.stderr,
                flush=True,
            )

    print(f"machine: {os.cpu_count()} logical CPUs; float32 (rows, 1024) CPU tensors, Gloo")
    print(table(best))
    print()
    print(summary(best))
    if binary is not None:
        print()
        print(plan_cache(binary, args))
    if args.json:
        Path(args.json).write_text(json.dumps(list(best.values()), indent=1))


if __name__ == "__main__":
    main()
