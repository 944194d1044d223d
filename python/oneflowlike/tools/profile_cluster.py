"""Measures this machine and writes a ClusterSpec JSON the cost model can use:

    python -m oneflowlike.tools.profile_cluster --out spec.json
    OFL_CLUSTER_SPEC=spec.json python train.py      # boxing prices plans with it

Measured on --nproc local ranks started through oneflowlike.distributed.launch, all at once, so
that the figures are a rank's share of the machine when its ranks share the cores (a "device"
of the plans): memory bandwidth (a large tensor copy, read + write bytes), fp32 GEMM FLOP/s
(flow.matmul at 1024^3) and how far below it a small one runs (1024x128 @ 128x128: ClusterSpec's
half_efficiency_flops), the overhead of starting one op (a one-element add), and the
collective link's alpha / beta, from all_reduce timed at a small size (4 KiB: a chunk for
every rank) and a large one. The fit solves ClusterSpec's ring formula,
t = overhead + 2 (p-1) (alpha + bytes / p / beta), at both sizes, with the all_reduces timed
back to back and averaged (a step pays the slow ones too: on 4 ranks over 2 cores the spread is
wide). Compute is timed with every rank busy, averaged over calls, so that a rank's compute time
is its fair share of the cores: a rank that raced ahead waits at the next collective for the
others, and the two add up to that share (an all_reduce timed on one rank right after compute
looks slower by what the others still computed, which the compute already counts). The local
link is written as both intra- and inter-node.

With --table it also times each collective (all_reduce, all_gather, reduce_scatter, all_to_all)
over every group size that divides the ranks, every group of that size running at once as a mesh
axis's groups do, at 4 KiB to 4 MiB, made non-decreasing in size: the spec's "collectives" table.
The cost model prices a group of a measured size by interpolating it, and the rest by the
alpha-beta fit. It times square matmuls too (64 to 1024 on CPUs in fp32; 256 to 8192 on GPUs in
bfloat16 and fp32): the "gemms" table, which times compute-bound ops by their FLOPs. With
--device cuda the ranks are a GPU each over NCCL (scripts/run_gpu_checks.sh runs it, for a spec
of the GPU machine in specs/). The launcher's measurement leaves it out: on 4 ranks over 2 cores, collectives
timed alone took 5 to 10 ms at every size up to 512 KiB, pairs about as long as the whole ring,
and inside a training step they take less, so the table priced bench_parallel's steps 26% and
33% off (median) where the fit is within 2 to 10%, and the signatures it chose ran 1.3 to 2.9x
slower (dp eager 95 to 280 ms, tp graph 111 to 206 ms). The GEMM table alone changed little
(8% median, in the fit's range).

Peaks not measured (fp64, fp16, int) keep the cpu_loopback preset's ratios to fp32.

The launcher measures on first use: a one-node job of several CPU ranks without OFL_CLUSTER_SPEC
gets this machine's spec for its rank count (`cached`), measured once and kept in
$OFL_CACHE_DIR (default ~/.cache/oneflowlike), keyed by the host, its processors and the
library's version. OFL_PROFILE_CLUSTER=0 turns that off (the preset then prices plans).
"""

import argparse
import fcntl
import hashlib
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time

import oneflowlike as flow
from oneflowlike import _C, cuda
from oneflowlike.distributed._env import JOB_ENV_VARS

_TAG = "OFL_PROFILE_RESULT "
# What is measured, in the cache's key: a spec measured otherwise is measured again.
# 2: the small matmul's half efficiency as a median over rounds; 3: collectives timed without the
# call check, as boxing runs them (comm::PlannedCollectives)
_METHOD = 3


def _sync(device):
    """Waits for the device's queued work (CUDA runs asynchronously)."""
    if device.startswith("cuda"):
        flow.cuda.synchronize(device)


def _mean(fn, repeat, device="cpu"):
    """Mean seconds per call: with every rank busy at once, what a rank gets of the cores over
    time (the best call would catch a moment when it had a core to itself)."""
    fn()  # warm up: allocation, thread pool, caches
    _sync(device)
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    _sync(device)
    return (time.perf_counter() - t0) / repeat


def measure_mem_bandwidth(nbytes=64 << 20, repeat=10, device="cpu"):
    """Bytes/s of a contiguous fp32 copy, counting the bytes read and the bytes written."""
    n = nbytes // 4
    src = flow.ones(n, device=device)
    dst = flow.zeros(n, device=device)
    return 2 * n * 4 / _mean(lambda: dst.copy_(src), repeat, device)


def measure_gemm_seconds(m, k, n, repeat=8, device="cpu", dtype="float32"):
    """Seconds of an (m, k) @ (k, n) matmul."""
    a = flow.randn(m, k, device=device).to(getattr(flow, dtype))
    b = flow.randn(k, n, device=device).to(getattr(flow, dtype))
    return _mean(lambda: flow.matmul(a, b), repeat, device)


# The spec's GEMM table (--table): square matmuls of these sizes, per dtype class measured (CPUs:
# fp32; GPUs: fp16 as bfloat16, and fp32), each timed for about GEMM_TABLE_SECONDS.
GEMM_TABLE_SIZES = {"cpu": (64, 128, 256, 512, 1024), "cuda": (256, 512, 1024, 2048, 4096, 8192)}
GEMM_TABLE_DTYPES = {"cpu": (("fp32", "float32"),),
                     "cuda": (("fp16", "bfloat16"), ("fp32", "float32"))}  # fmt: skip
GEMM_TABLE_SECONDS = 0.2


def measure_gemm_table(device="cpu"):
    """[{"dtype", "flops", "seconds"}]: square matmuls of GEMM_TABLE_SIZES, per dtype class,
    the times made non-decreasing in FLOPs."""
    kind = "cuda" if device.startswith("cuda") else "cpu"
    table = []
    for cls, dtype in GEMM_TABLE_DTYPES[kind]:
        flops, seconds = [], []
        for n in GEMM_TABLE_SIZES[kind]:
            once = measure_gemm_seconds(n, n, n, repeat=1, device=device, dtype=dtype)
            repeat = max(2, min(100, int(GEMM_TABLE_SECONDS / max(once, 1e-9))))
            flops.append(2.0 * n**3)
            seconds.append(measure_gemm_seconds(n, n, n, repeat, device, dtype))
        table.append({"dtype": cls, "flops": flops, "seconds": nondecreasing(seconds)})
    return table


# A small matmul, a layer of a small model (1024 tokens, width 128): what it takes beyond its
# FLOPs at the large one's rate is ClusterSpec's half_efficiency_flops.
SMALL_GEMM = (1024, 128, 128)


def fit_half_efficiency(flops_rate, small_seconds, m=SMALL_GEMM[0], k=SMALL_GEMM[1],
                        n=SMALL_GEMM[2]):  # fmt: skip
    """The FLOPs h with which a matmul of f FLOPs takes (f + h) / rate: from the small one's
    time at the large one's rate (0 when it keeps up)."""
    return max(small_seconds * flops_rate - 2.0 * m * k * n, 0.0)


def measure_gemm(rounds=7, device="cpu"):
    """(FLOP/s of the large matmul, half_efficiency_flops), each the median over rounds that
    time the large and the small matmul back to back: the half efficiency is the small one's
    time less its FLOPs at the large one's rate, a difference of two noisy times, so each
    round's pair shares the moment's share of the cores, and an outlier round is outvoted."""
    n = 1024
    rates, halves = [], []
    for _ in range(rounds):
        rate = 2.0 * n**3 / measure_gemm_seconds(n, n, n, repeat=2, device=device)
        rates.append(rate)
        small = measure_gemm_seconds(*SMALL_GEMM, repeat=10, device=device)
        halves.append(fit_half_efficiency(rate, small))
    return statistics.median(rates), statistics.median(halves)


def fit_alpha_beta(p, small_bytes, t_small, large_bytes, t_large):
    """alpha, beta from ring all_reduce times at two sizes, t = 2 (p-1) (alpha + bytes / p / beta)."""
    hops = 2 * (p - 1)
    # A noisy small-size time must not eat the large one: latency is at most half of it.
    t_small = min(t_small, 0.5 * t_large)
    beta = hops * (large_bytes - small_bytes) / p / max(t_large - t_small, 1e-12)
    alpha = max(t_small / hops - small_bytes / p / beta, 1e-9)
    return alpha, beta


def _time_all_reduce(flow, numel, iters, device="cpu"):
    dist = flow.distributed
    x = flow.ones(numel, device=device)
    for _ in range(3):
        dist.all_reduce(x)
    dist.barrier()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        dist.all_reduce(x)
        _sync(device)
        times.append(time.perf_counter() - t0)
    return statistics.mean(times)  # a step pays every collective, the slow ones too


# The collectives timed for the spec's table, the buffer sizes (ClusterSpec's count: the
# gathered output of all_gather, the input of the others) and the calls timed at each.
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
TABLE_SIZES = ((4 << 10, 40), (64 << 10, 30), (512 << 10, 15), (4 << 20, 6))


def group_sizes(world):
    """The group sizes a plan's collectives run over on `world` local ranks: every divisor > 1
    (a mesh axis's groups)."""
    return [g for g in range(2, world + 1) if world % g == 0]


def _time_collective(flow, kind, group, size, nbytes, iters, device="cpu"):
    """Mean seconds of `kind` over `group` (of `size` ranks) on a buffer of nbytes."""
    dist = flow.distributed
    x = flow.ones(max(nbytes // 4 // (size if kind == "all_gather" else 1), size), device=device)
    call = {
        "all_reduce": lambda: dist.all_reduce(x, group=group),
        "all_gather": lambda: dist.all_gather(x, group=group),
        "reduce_scatter": lambda: dist.reduce_scatter(x, group=group),
        "all_to_all": lambda: dist.all_to_all(x, group=group),
    }[kind]
    call()
    _sync(device)
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        call()
    _sync(device)
    return (time.perf_counter() - t0) / iters


def nondecreasing(times):
    """The least-squares fit of `times` that never decreases (pool adjacent violators): a larger
    buffer is not faster, and on shared cores single times swing by 2x either way."""
    blocks = []  # [mean, count]
    for t in times:
        blocks.append([t, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            (a, n), (b, m) = blocks.pop(-2), blocks.pop()
            blocks.append([(a * n + b * m) / (n + m), n + m])
    return [mean for mean, count in blocks for _ in range(count)]


def measure_collective_table(flow, device="cpu"):
    """[{"kind", "group", "bytes", "seconds"}]: each collective over every group size, all the
    world's groups of that size (contiguous ranks) at once, at TABLE_SIZES; a rank's own
    times (rank 0's are reported)."""
    dist = flow.distributed
    world, rank = dist.get_world_size(), dist.get_rank()
    table = []
    for size in group_sizes(world):
        first = rank // size * size
        mine = dist.new_group(range(first, first + size)) if size < world else None
        for kind in COLLECTIVES:
            seconds = nondecreasing(
                [
                    _time_collective(flow, kind, mine, size, nbytes, iters, device)
                    for nbytes, iters in TABLE_SIZES
                ]
            )
            table.append(
                {"kind": kind, "group": size, "bytes": [b for b, _ in TABLE_SIZES],
                 "seconds": seconds}
            )  # fmt: skip
    return table


def measure_op_overhead(iters=2000, device="cpu"):
    """Seconds per call of a one-element add: what starting an op costs beyond its work."""
    x = flow.ones(1, device=device)
    return _mean(lambda: [x + 1 for _ in range(iters)], 3, device) / iters


def _worker(args):
    """One rank of the collective measurement; rank 0 prints the timings as a tagged JSON line."""
    dist = flow.distributed
    dist.init()
    # A GPU a rank, as the launcher numbers them.
    device = f"cuda:{dist.get_local_rank()}" if args.device == "cuda" else "cpu"
    small = _time_all_reduce(flow, args.small_bytes // 4, args.small_iters, device)
    large = _time_all_reduce(flow, args.large_bytes // 4, args.large_iters, device)
    table = measure_collective_table(flow, device) if args.table else []
    dist.barrier()  # every rank computes at once: a rank's share of the cores
    flops, half_efficiency = measure_gemm(device=device)
    gemms = measure_gemm_table(device) if args.table else []
    dist.barrier()
    bandwidth = measure_mem_bandwidth(device=device)
    dist.barrier()
    overhead = measure_op_overhead(device=device)
    if dist.get_rank() == 0:
        out = {"world": dist.get_world_size(), "t_small": small, "t_large": large}
        out.update(flops_fp32=flops, mem_bandwidth=bandwidth)
        out.update(half_efficiency_flops=half_efficiency)
        out.update(op_overhead=overhead, collectives=table, gemms=gemms)
        print(_TAG + json.dumps(out), flush=True)
    dist.barrier()


def measure_collectives(nproc, small_bytes, large_bytes, small_iters, large_iters, table=False,
                        timeout=120, device="cpu"):  # fmt: skip
    """The ranks' measurements: world, t_small and t_large (mean all_reduce seconds over nproc
    local ranks), and rank 0's flops_fp32 and mem_bandwidth while every rank measured them."""
    env = {k: v for k, v in os.environ.items() if k not in JOB_ENV_VARS}
    env["OFL_PROFILE_CLUSTER"] = "0"  # that launcher measures nothing itself
    env["OFL_COMM_CHECK"] = "0"  # boxing's collectives skip the call check: time them so
    cmd = [
        sys.executable, "-m", "oneflowlike.distributed.launch", "--nproc_per_node", str(nproc),
        "--rdzv_timeout", "30", "-m", "oneflowlike.tools.profile_cluster", "--worker",
        "--small_bytes", str(small_bytes), "--large_bytes", str(large_bytes),
        "--small_iters", str(small_iters), "--large_iters", str(large_iters),
    ] + (["--table"] if table else []) + ["--device", device]  # fmt: skip
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    for line in r.stdout.splitlines():
        if line.startswith(_TAG):
            return json.loads(line[len(_TAG) :])
    raise RuntimeError(
        f"[profile_cluster] the all_reduce workers exited {r.returncode} without a result:\n"
        f"{r.stdout}\n{r.stderr}"
    )


def profile(nproc=2, small_bytes=4096, large_bytes=16 << 20, small_iters=200, large_iters=10,
            table=False, device="cpu"):  # fmt: skip
    """A ClusterSpec measured on this machine, and a dict of the raw measurements. With `table`,
    the spec also carries each collective's times over every group size (measure_collective_table),
    which price those groups in place of the alpha-beta fit, and matmul times by FLOPs
    (measure_gemm_table), which price compute-bound ops. device "cuda": a GPU a rank, over NCCL,
    from the h100_ib preset (its ratios for the peaks not measured, NCCL's trees)."""
    spec = (
        _C.ClusterSpec.h100_ib(1, nproc) if device == "cuda" else _C.ClusterSpec.cpu_loopback(nproc)
    )
    base_fp32 = spec.flops_fp32
    spec.name = "measured"
    raw = measure_collectives(
        nproc, small_bytes, large_bytes, small_iters, large_iters, table, device=device
    )
    scale = raw["flops_fp32"] / base_fp32
    spec.flops_fp32 = raw["flops_fp32"]
    spec.flops_fp64 *= scale
    spec.flops_fp16 *= scale
    spec.flops_int *= scale
    spec.half_efficiency_flops = raw["half_efficiency_flops"]
    spec.mem_bandwidth = raw["mem_bandwidth"]
    spec.op_overhead = raw["op_overhead"]
    world, t_small, t_large = raw["world"], raw["t_small"], raw["t_large"]
    raw.update(small_bytes=small_bytes, large_bytes=large_bytes, alpha=None, beta=None)
    if world > 1:  # one GPU alone: no link to measure, the preset's stays
        alpha, beta = fit_alpha_beta(world, small_bytes, t_small, large_bytes, t_large)
        raw.update(alpha=alpha, beta=beta)
        spec.intra_alpha = spec.inter_alpha = alpha
        spec.intra_beta = spec.inter_beta = beta
        spec.collective_overhead = 0.0  # the measured alpha includes starting a collective
    if device == "cuda":  # the GEMM table's largest bfloat16 matmul: the tensor cores' rate
        spec.compute_efficiency = 1.0
        for g in raw["gemms"]:
            if g["dtype"] == "fp16":
                spec.flops_fp16 = g["flops"][-1] / g["seconds"][-1]
    if raw["collectives"] or raw["gemms"]:  # set through the JSON, which checks the tables
        fields = json.loads(spec.to_json())
        fields.update(collectives=raw["collectives"], gemms=raw["gemms"])
        spec = _C.ClusterSpec.from_json(json.dumps(fields))
    return spec, raw


def cache_dir():
    """Where measured specs are kept: $OFL_CACHE_DIR, else $XDG_CACHE_HOME/oneflowlike, else
    ~/.cache/oneflowlike."""
    if os.environ.get("OFL_CACHE_DIR"):
        return os.environ["OFL_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "oneflowlike")


def _processors():
    """The processor's model name and the cores this process may use."""
    model = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            model = next(
                (line.split(":", 1)[1].strip() for line in f if "model name" in line), model
            )
    except OSError:
        pass
    return f"{model} x{len(os.sched_getaffinity(0))}"


def cache_path(nproc):
    """The measured spec's file for nproc local ranks on this machine and library version."""
    key = f"{socket.gethostname()}|{_processors()}|{flow.__version__}|{_METHOD}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return os.path.join(cache_dir(), f"cluster_spec_{nproc}ranks_{digest}.json")


def _loads(path):
    try:
        _C.ClusterSpec.load(path)
        return True
    except (OSError, RuntimeError):
        return False


def cached(nproc, say=print):
    """The path of this machine's spec for nproc local ranks: measured and written on first use
    (several seconds; `say` tells what is happening), read afterwards. Concurrent callers measure
    once (a lock beside the file); a file that does not load (damaged, or another version's) is
    measured again."""
    path = cache_path(nproc)
    if os.path.exists(path) and _loads(path):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(path):
            if _loads(path):
                return path
            say(f"{path} does not load as a cluster spec: measuring again")
        say(f"measuring this machine for the cost model on {nproc} ranks (once; kept in {path})")
        t0 = time.perf_counter()
        spec, _ = profile(nproc)
        tmp = f"{path}.{os.getpid()}.tmp"
        spec.save(tmp)
        os.replace(tmp, path)  # readers see the whole file or none
        say(f"measured in {time.perf_counter() - t0:.1f} s")
    return path


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m oneflowlike.tools.profile_cluster", description=__doc__
    )
    p.add_argument("--out", default="cluster_spec.json", help="where to write the spec JSON")
    p.add_argument("--nproc", type=int, default=2, help="local ranks (the devices to plan for)")
    # Small, but a chunk for every rank: one element takes a shortcut that real buffers do not.
    p.add_argument("--small_bytes", type=int, default=4096)
    p.add_argument("--large_bytes", type=int, default=16 << 20)
    p.add_argument("--small_iters", type=int, default=200)
    p.add_argument("--large_iters", type=int, default=10)
    p.add_argument(
        "--table",
        action="store_true",
        help="also time each collective over every group size and matmuls by size, to price "
        "them by (see above)",
    )
    p.add_argument(
        "--device", choices=("cpu", "cuda"), default="cpu",
        help="measure CPU ranks (default) or a GPU a rank over NCCL",
    )  # fmt: skip
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return _worker(args)
    if args.device == "cuda":
        if cuda.device_count() < args.nproc:
            p.error(f"--device cuda --nproc {args.nproc}: {cuda.device_count()} GPUs visible")
    if args.nproc < (1 if args.device == "cuda" else 2):
        p.error("--nproc must be at least 2 to measure a link (1 GPU: its compute alone)")
    t0 = time.perf_counter()
    spec, raw = profile(
        args.nproc, args.small_bytes, args.large_bytes, args.small_iters, args.large_iters,
        args.table, args.device,
    )  # fmt: skip
    spec.save(args.out)
    print(f"memory bandwidth  {raw['mem_bandwidth'] / 1e9:.2f} GB/s (copy, read + write)")
    print(f"fp32 GEMM         {raw['flops_fp32'] / 1e9:.2f} GFLOP/s (1024^3 matmul)")
    m, k, n = SMALL_GEMM
    print(
        f"small GEMM        ({m}x{k} @ {k}x{n}): half efficiency at "
        f"{spec.half_efficiency_flops / 1e6:.1f} MFLOP (the median of 7 rounds)"
    )
    if raw["alpha"] is not None:
        print(
            f"all_reduce x{raw['world']}     {raw['t_small'] * 1e6:.1f} us at "
            f"{raw['small_bytes']} B, {raw['t_large'] * 1e3:.2f} ms at "
            f"{raw['large_bytes'] / 2**20:.0f} MiB"
        )
        print(f"link alpha        {raw['alpha'] * 1e6:.1f} us")
        print(f"link beta         {raw['beta'] / 1e9:.2f} GB/s")
    print(f"op overhead       {spec.op_overhead * 1e6:.2f} us per op")
    for kind, group, sizes, seconds in spec.measured_collectives:
        times = ", ".join(f"{t * 1e3:.2f} ms at {int(b) >> 10} KiB" for b, t in zip(sizes, seconds))
        print(f"{kind} x{group}: {times}")
    for dtype, flops, seconds in spec.measured_gemms:
        rates = ", ".join(f"{f / t / 1e9:.1f}" for f, t in zip(flops, seconds))
        print(f"{dtype} GEMM GFLOP/s at {flops[0]:.3g} to {flops[-1]:.3g} FLOPs: {rates}")
    print(f"wrote {args.out} in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
