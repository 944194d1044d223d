"""ClusterSpec from Python: presets through JSON, the default boxing spec, and the profiler."""

import importlib.util
import json
import subprocess
import sys

import pytest

import oneflowlike as flow
from oneflowlike import _C

from _launch import clean_env

PRESETS = [
    lambda: _C.ClusterSpec.cpu_loopback(4),
    lambda: _C.ClusterSpec.a100_nvlink(2, 8),
    lambda: _C.ClusterSpec.h100_ib(4, 8),
]


@pytest.mark.parametrize("make", PRESETS)
def test_presets_round_trip_through_json(make, tmp_path):
    spec = make()
    assert _C.ClusterSpec.from_json(spec.to_json()) == spec
    path = str(tmp_path / "spec.json")
    spec.save(path)
    loaded = _C.ClusterSpec.load(path)
    assert loaded == spec
    assert (loaded.name, loaded.nodes, loaded.devices_per_node) == (
        spec.name,
        spec.nodes,
        spec.devices_per_node,
    )
    assert json.loads(spec.to_json())["intra_beta"] == spec.intra_beta


def test_compute_reaches_its_efficiency_and_small_ops_less():
    spec = _C.ClusterSpec.a100_nvlink(1, 8)
    spec.compute_efficiency, spec.half_efficiency_flops, spec.op_overhead = 1.0, 0.0, 0.0
    f = 2 * 4096**3  # a 4096^3 GEMM: 137 GFLOP, 100 MB in float16
    roofline = f / 312e12
    assert spec.compute(f, 3 * 4096**2 * 2, flow.float16) == pytest.approx(roofline)
    spec.compute_efficiency, spec.half_efficiency_flops = 0.8, 2e9
    # (f + half) / (peak x efficiency): 0.8 of the peak at scale, half of 0.8 at 2 GFLOP
    assert spec.compute(f, 0, flow.float16) == pytest.approx((f + 2e9) / (312e12 * 0.8))
    half = spec.compute(2e9, 0, flow.float16)
    assert 2e9 / half == pytest.approx(0.4 * 312e12)
    # Memory-bound work stays at the bandwidth, whatever the efficiency: a copy has no FLOPs,
    # and an elementwise op's few FLOPs pay no matmul's ramp.
    assert spec.compute(0, 2.039e12, flow.float16) == pytest.approx(1.0)
    assert spec.compute(1e6, 2.039e9, flow.float16) == pytest.approx(1e-3)
    spec.op_overhead = 5e-6
    assert spec.compute(0, 0, flow.float16) == pytest.approx(5e-6)
    back = _C.ClusterSpec.from_json(spec.to_json())
    assert (back.compute_efficiency, back.half_efficiency_flops) == (0.8, 2e9)


def test_fields_are_settable_and_bad_json_is_named():
    spec = _C.ClusterSpec.cpu_loopback(2)
    spec.intra_beta = 5e9
    spec.flops_fp32 = 1e12
    spec.name = "mine"
    back = _C.ClusterSpec.from_json(spec.to_json())
    assert (back.intra_beta, back.flops_fp32, back.name) == (5e9, 1e12, "mine")
    assert back != _C.ClusterSpec.cpu_loopback(2)
    with pytest.raises(RuntimeError, match="bogus"):
        _C.ClusterSpec.from_json('{"bogus": 1}')
    with pytest.raises(RuntimeError, match=r'"nodes" must be a positive whole number, got 1e\+300'):
        _C.ClusterSpec.from_json('{"nodes": 1e300}')
    for count in ("nodes", "devices_per_node", "nics_per_node"):
        with pytest.raises(ValueError, match=rf"ClusterSpec.{count} must be at least 1, got 0"):
            setattr(spec, count, 0)  # every rank's node would be a division by zero
    spec.nics_per_node, spec.tree_all_reduce = 2, True
    back = _C.ClusterSpec.from_json(spec.to_json())
    assert (back.nics_per_node, back.tree_all_reduce) == (2, True)


def _plan_seconds():
    p = flow.placement("cpu", [0, 1])
    split, bcast = _C.NdSbp([flow.sbp.split(0)]), _C.NdSbp([flow.sbp.broadcast])
    return _C.boxing_plan([1024, 1024], flow.float32, p, split, p, bcast)[0]


def test_set_cluster_spec_changes_boxing_cost():
    old = _C.get_cluster_spec()
    try:
        _C.set_cluster_spec(_C.ClusterSpec.cpu_loopback(1))
        slow = _plan_seconds()
        _C.set_cluster_spec(_C.ClusterSpec.h100_ib(2, 8))
        assert _C.get_cluster_spec().name == "h100_ib"
        fast = _plan_seconds()
        assert 0 < fast < slow / 10
    finally:
        _C.set_cluster_spec(old)
    assert _C.get_cluster_spec() == old


@pytest.mark.multiprocess
def test_env_var_picks_the_default_spec(tmp_path):
    path = tmp_path / "spec.json"
    spec = _C.ClusterSpec.h100_ib(1, 8)
    spec.name = "from_env"
    spec.save(str(path))
    code = "from oneflowlike import _C; print(_C.get_cluster_spec().name)"
    r = subprocess.run(
        [sys.executable, "-c", code],
        env=clean_env(OFL_CLUSTER_SPEC=path),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "from_env"


_within_40s = pytest.mark.timeout(40) if importlib.util.find_spec("pytest_timeout") else lambda f: f


@_within_40s  # the subprocess timeout bounds it too
@pytest.mark.multiprocess
def test_profiler_writes_a_loadable_spec(tmp_path):
    out = tmp_path / "measured.json"
    r = subprocess.run(
        [sys.executable, "-m", "oneflowlike.tools.profile_cluster", "--out", str(out), "--table"],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=40,
    )
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "link beta" in r.stdout
    spec = _C.ClusterSpec.load(str(out))
    assert spec.name == "measured"
    for field in ("flops_fp32", "mem_bandwidth", "intra_alpha", "intra_beta"):
        assert getattr(spec, field) > 0, field
    assert spec.intra_alpha < 1.0 and spec.intra_beta > 1e6
    # --table: each collective over pairs (the one group size of 2 ranks), times not decreasing
    # with size, and pricing a pair by them.
    table = {
        kind: (group, sizes, seconds) for kind, group, sizes, seconds in spec.measured_collectives
    }
    assert sorted(table) == ["all_gather", "all_reduce", "all_to_all", "reduce_scatter"]
    for group, sizes, seconds in table.values():
        assert group == 2 and sizes == sorted(sizes) and len(sizes) == 4
        assert all(0 < a <= b < 1.0 for a, b in zip(seconds, seconds[1:]))
    group, sizes, seconds = table["all_reduce"]
    assert spec.all_reduce([0, 1], sizes[1]) == pytest.approx(seconds[1])
    [(dtype, flops, seconds)] = spec.measured_gemms  # fp32 matmuls, 64 to 1024 a side
    assert dtype == "fp32" and flops == [2.0 * n**3 for n in (64, 128, 256, 512, 1024)]
    assert all(0 < a <= b < 10.0 for a, b in zip(seconds, seconds[1:]))
    assert spec.compute(flops[-1], 0, flow.float32) == pytest.approx(seconds[-1] + spec.op_overhead)
    assert "fp32 GEMM GFLOP/s" in r.stdout


@pytest.mark.multiprocess
def test_the_launcher_measures_this_machine_once_and_its_ranks_price_with_it(tmp_path):
    from _launch import launch

    env = clean_env(OFL_CACHE_DIR=tmp_path / "cache")
    env.pop("OFL_PROFILE_CLUSTER")
    env.pop("OFL_CLUSTER_SPEC", None)
    show = tmp_path / "show.py"
    show.write_text(
        "import os, sys\nfrom oneflowlike import _C\n"  # one write a line: ranks share the pipe
        "sys.stdout.write(f\"{os.environ.get('OFL_CLUSTER_SPEC')} {_C.get_cluster_spec().name}\\n\")\n"
    )

    def run(**extra):
        r = launch(["--nproc_per_node", "2"], [str(show)], env=dict(env, **extra), timeout=120)
        assert r.returncode == 0, r
        return r, sorted(r.stdout.splitlines())

    first, ranks = run()
    assert "measuring this machine for the cost model on 2 ranks" in first.stderr, first
    [path] = (tmp_path / "cache").glob("cluster_spec_2ranks_*.json")
    assert ranks == [f"{path} measured"] * 2
    assert _C.ClusterSpec.load(str(path)).intra_beta > 1e6
    # Measured once: the next job reads it.
    made = path.stat().st_mtime_ns
    second, ranks = run()
    assert "measuring" not in second.stderr and path.stat().st_mtime_ns == made, second
    assert ranks == [f"{path} measured"] * 2
    # A damaged file is measured again, saying so.
    path.write_text('{"name": "measured", "nodes": ')
    third, ranks = run()
    assert "does not load as a cluster spec: measuring again" in third.stderr, third
    assert ranks == [f"{path} measured"] * 2
    # A cache that cannot be written: the job runs on the preset, saying why.
    blocked = tmp_path / "a_file"
    blocked.write_text("")
    r, ranks = run(OFL_CACHE_DIR=str(blocked / "cache"))
    assert "could not measure this machine for the cost model" in r.stderr, r
    assert ranks == ["None cpu_loopback"] * 2
    # Turned off, or a spec of the user's: the ranks keep what they have.
    assert run(OFL_PROFILE_CLUSTER="0")[1] == ["None cpu_loopback"] * 2
    mine = tmp_path / "mine.json"
    _C.ClusterSpec.cpu_loopback(2).save(str(mine))
    assert run(OFL_CLUSTER_SPEC=str(mine))[1] == [f"{mine} cpu_loopback"] * 2


def test_a_small_matmul_slower_than_the_large_ones_rate_gives_the_half_efficiency_flops():
    from oneflowlike.tools.profile_cluster import fit_half_efficiency

    # 1 ms for 2 * 1024 * 128 * 128 FLOPs at 100 GFLOP/s: 1e8 FLOPs' time, 33554432 of them work.
    assert fit_half_efficiency(1e11, 1e-3, 1024, 128, 128) == 1e8 - 33554432
    assert fit_half_efficiency(1e11, 1e-6, 1024, 128, 128) == 0.0  # faster than the rate: none
    spec = _C.ClusterSpec.cpu_loopback(2)
    spec.half_efficiency_flops = fit_half_efficiency(spec.flops_fp32, 1e-3, 1024, 128, 128)
    # The small matmul is then priced at what it took (ClusterSpec.compute: (f + h) / rate).
    assert spec.compute(2 * 1024 * 128 * 128, 0, flow.float32) == pytest.approx(1e-3, rel=1e-9)


def test_a_measured_table_is_made_nondecreasing_by_pooling_the_violators():
    from oneflowlike.tools.profile_cluster import nondecreasing

    assert nondecreasing([1.0, 2.0, 3.0]) == [1.0, 2.0, 3.0]
    assert nondecreasing([3.0, 1.0, 2.0, 4.0]) == [2.0, 2.0, 2.0, 4.0]
    assert nondecreasing([4.0, 3.0, 2.0, 1.0]) == [2.5] * 4


@pytest.mark.multiprocess
def test_profiling_more_gpus_than_are_visible_is_refused_naming_the_count():
    r = subprocess.run(
        [sys.executable, "-m", "oneflowlike.tools.profile_cluster", "--device", "cuda", "--nproc", "64"],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=40,
    )
    assert r.returncode == 2 and "--device cuda --nproc 64:" in r.stderr, r.stderr
    assert "GPUs visible" in r.stderr
