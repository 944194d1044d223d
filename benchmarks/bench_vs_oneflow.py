"""OneFlow 0.9 beside us, in one run: the same programs (vs_oneflow_worker.py) under both, the
sides alternating which goes first at every repeat, and ratio = OneFlow's time / ours (> 1: we
are faster). Cases: eager ops and dispatch, the example GPT's training step eager and as an
nn.Graph (one process), the same step data and tensor parallel on 4 ranks (eager and as a graph),
and boxing (x.to_global) for each pair at 1, 16 and 64 MB on 2 and 4 ranks; the multi-rank cases
are started by each side's own launcher.

OneFlow lives in its own venv (scripts/setup_oneflow.sh; the wheel is about 1 GB, so this is not
part of the tests):

    scripts/setup_oneflow.sh
    python benchmarks/bench_vs_oneflow.py [--venv DIR] [--repeats 2] [--cases ops,gpt,parallel,boxing]
        [--ranks 2,4] [--sizes 1048576,16777216,67108864]

Each rank of either side gets 1/N of the cores (OMP_NUM_THREADS), as our launcher gives them.
The best time over repeats is kept per side; the spread of the ratio over repeats is printed.
"""

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKER = HERE / "vs_oneflow_worker.py"
DEFAULT_VENV = os.environ.get(
    "OFL_ONEFLOW_VENV", str(Path.home() / ".cache" / "oneflowlike" / "oneflow-venv")
)


def side_env(side, venv, threads):
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(threads)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(HERE)] + ([env["PYTHONPATH"]] if side == "oneflowlike" and "PYTHONPATH" in env else [])
    )
    if side == "oneflow":
        site = next(Path(venv, "lib").glob("python3.10/site-packages"))
        libs = [str(site / "nvidia" / "cudnn" / "lib"), str(site / "nvidia" / "cublas" / "lib")]
        env["LD_LIBRARY_PATH"] = os.pathsep.join(libs + [env.get("LD_LIBRARY_PATH", "")])
        env["GLOG_minloglevel"] = "2"
    return env


def run_side(side, case, ranks, args):
    """{case name: seconds} from one run of the worker under `side`."""
    python = str(Path(args.venv, "bin", "python")) if side == "oneflow" else sys.executable
    cmd = [python]
    if ranks:
        cmd += ["-m", f"{side}.distributed.launch", "--nproc_per_node", str(ranks)]
    cmd += [str(WORKER), "--side", side, "--case", case, "--sizes", args.sizes]
    threads = max(1, os.cpu_count() // (ranks or 1))
    p = subprocess.run(
        cmd,
        env=side_env(side, args.venv, threads),
        capture_output=True,
        text=True,
        timeout=args.timeout,
    )
    rows = {}
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            rows[row["case"]] = row["s"]
    lines = (p.stdout + p.stderr).splitlines()
    if not rows:
        tail = "\n".join(lines[-20:])
        sys.exit(f"[bench_vs_oneflow] {side} {case} (ranks {ranks}) failed:\n{tail}")
    if p.returncode != 0:  # died part way (OneFlow 0.9 aborts on some programs): keep what ran
        why = next((ln for ln in lines if "Check failed" in ln or "Error" in ln), lines[-1])
        FAILED[(side, case)] = f"exited {p.returncode} after {len(rows)} rows: {why.strip()}"
        print(f"[bench_vs_oneflow] {side} {case}: {FAILED[(side, case)]}", flush=True)
    return rows


FAILED = {}  # (side, case) -> why that side's run of the case stopped early


def fmt(s):
    return f"{s * 1e3:9.3f} ms" if s >= 1e-3 else f"{s * 1e6:9.1f} us"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", default=DEFAULT_VENV, help="OneFlow 0.9's venv")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--cases", default="ops,gpt,parallel,boxing")
    ap.add_argument("--ranks", default="2,4", help="rank counts for boxing (parallel: the most)")
    ap.add_argument("--sizes", default=f"{1 << 20},{16 << 20},{64 << 20}")
    ap.add_argument("--timeout", type=float, default=1800)
    args = ap.parse_args()
    if not Path(args.venv, "bin", "python").exists():
        sys.exit(f"no OneFlow venv at {args.venv}: run scripts/setup_oneflow.sh first")

    jobs = []
    for case in args.cases.split(","):
        if case == "boxing":
            jobs += [(case, int(n)) for n in args.ranks.split(",")]
        elif case == "parallel":
            jobs.append((case, max(int(n) for n in args.ranks.split(","))))
        else:
            jobs.append((case, 0))
    best = {}  # (side, name) -> seconds
    ratios = {}  # name -> ratio per repeat
    order = []
    for rep in range(args.repeats):
        for case, ranks in jobs:
            sides = ("oneflow", "oneflowlike") if rep % 2 == 0 else ("oneflowlike", "oneflow")
            got = {side: run_side(side, case, ranks, args) for side in sides}
            for name in got["oneflowlike"]:
                if name not in got["oneflow"]:  # OneFlow stopped before it: ours alone
                    key = ("oneflowlike", name)
                    best[key] = min(best.get(key, math.inf), got["oneflowlike"][name])
                    continue
                if name not in ratios:
                    order.append(name)
                ratios.setdefault(name, []).append(got["oneflow"][name] / got["oneflowlike"][name])
                for side in sides:
                    key = (side, name)
                    best[key] = min(best.get(key, math.inf), got[side][name])
            print(f"[bench_vs_oneflow] repeat {rep + 1}/{args.repeats}: {case} done", flush=True)

    print(f"\nOneFlow 0.9.0 vs oneflowlike, {os.cpu_count()} CPUs; best of {args.repeats} runs")
    print(f"{'case':34s} {'OneFlow':>12s} {'ours':>12s} {'ratio':>7s}  spread over runs")
    for name in order:
        r = ratios[name]
        ratio = best[("oneflow", name)] / best[("oneflowlike", name)]
        print(
            f"{name:34s} {fmt(best[('oneflow', name)]):>12s} {fmt(best[('oneflowlike', name)]):>12s}"
            f" {ratio:6.2f}x  {min(r):.2f}x-{max(r):.2f}x"
        )
    for (side, name), seconds in best.items():
        if side == "oneflowlike" and name not in ratios:
            print(f"{name:34s} {'(did not run)':>12s} {fmt(seconds):>12s}")
    below = [n for n in order if best[("oneflow", n)] < best[("oneflowlike", n)]]
    print(f"below 1.0x: {', '.join(below) if below else 'none'}")
    for (side, case), why in FAILED.items():
        print(f"{side} did not finish {case}: {why}")


if __name__ == "__main__":
    main()
