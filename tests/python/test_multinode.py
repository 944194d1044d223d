"""Two nodes for real: two network namespaces joined by a veth pair, each with its own address,
each running the launcher with --nnodes 2. Needs root (skipped with a printed reason otherwise).
"""

import os
import shutil
import subprocess
import time
import warnings

import numpy as np
import pytest

import oneflowlike as flow
from _launch import LAUNCH, clean_env, json_lines, worker

pytestmark = pytest.mark.multiprocess

ADDRS = ("10.231.0.1", "10.231.0.2")


def _skip(reason):
    warnings.warn(f"multi-node test skipped: {reason}")  # shown in pytest's summary
    print(f"multi-node test skipped: {reason}")
    pytest.skip(reason)


def _ip(*args):
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


def _must(*args):
    r = _ip(*args)
    if r.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed: {r.stderr.strip()}")


@pytest.fixture
def two_nodes():
    """The names of two namespaces, at ADDRS[0] and ADDRS[1]."""
    if os.geteuid() != 0:
        _skip("creating network namespaces needs root")
    if shutil.which("ip") is None:
        _skip("`ip` (iproute2) is not installed")
    pid = os.getpid()
    names = [f"ofl{pid}n0", f"ofl{pid}n1"]
    veths = [f"oflv{pid}a", f"oflv{pid}b"]  # interface names hold at most 15 characters
    made = []
    try:
        for ns in names:
            r = _ip("netns", "add", ns)
            if r.returncode != 0:
                _skip(f"`ip netns add` failed: {r.stderr.strip()}")
            made.append(ns)
        _must("link", "add", veths[0], "type", "veth", "peer", "name", veths[1])
        for ns, veth, addr in zip(names, veths, ADDRS):
            _must("link", "set", veth, "netns", ns)
            _must("-n", ns, "addr", "add", f"{addr}/24", "dev", veth)
            _must("-n", ns, "link", "set", veth, "up")
            _must("-n", ns, "link", "set", "lo", "up")
        yield names
    finally:
        for ns in made:  # deleting a namespace deletes its end of the veth pair, and so both
            _ip("netns", "delete", ns)
        if _ip("link", "show", veths[0]).returncode == 0:
            _ip("link", "delete", veths[0])


def _start_node(ns, node_rank, port):
    cmd = ["ip", "netns", "exec", ns, *LAUNCH, "--nnodes", "2", "--node_rank", str(node_rank)]
    cmd += ["--nproc_per_node", "2", "--master_addr", ADDRS[0], "--master_port", str(port)]
    cmd += ["--rdzv_timeout", "30", worker("allreduce_worker.py")]
    env = clean_env(OFL_STORE_TOKEN=f"multinode-{os.getpid()}")
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("node1_first", [False, True])
def test_two_nodes_all_reduce(two_nodes, node1_first):
    if not hasattr(flow._C, "comm"):
        _skip("this build has no oneflowlike._C.comm")
    order = [1, 0] if node1_first else [0, 1]
    procs = {}
    for n in order:
        procs[n] = _start_node(two_nodes[n], n, 29500)
        time.sleep(0.5 if node1_first else 0)  # node 1 must wait for node 0's store
    outs = {}
    try:
        for n, p in procs.items():
            outs[n] = p.communicate(timeout=90)
    finally:
        for p in procs.values():
            p.kill()
    assert [procs[n].returncode for n in (0, 1)] == [0, 0], outs
    reports = {int(rep["rank"]): rep for n in (0, 1) for rep in json_lines(outs[n][0])}
    assert sorted(reports) == [0, 1, 2, 3], outs
    want_sum = (4 * np.arange(5) + 6).tolist()
    want_gathered = [r for r in range(4) for _ in range(r + 1)]
    for rank, rep in reports.items():
        assert (rep["size"], rep["node"], rep["local_rank"]) == (4, rank // 2, rank % 2)
        assert rep["sum"] == want_sum and rep["gathered"] == want_gathered
        assert rep["addr"] == ADDRS[rank // 2]
    for n in (0, 1):
        assert sorted(rep["rank"] for rep in json_lines(outs[n][0])) == [2 * n, 2 * n + 1]
