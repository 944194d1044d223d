"""Starts one process per local rank, torchrun-style:

    python -m oneflowlike.distributed.launch --nproc_per_node 4 train.py --lr 0.1

Every child gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK (= NODE_RANK),
GROUP_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, OFL_STORE_TOKEN, OFL_COMM_TIMEOUT_S (with
--rdzv_timeout) and OMP_NUM_THREADS / OFL_NUM_THREADS (this node's cores split among its ranks)
unless already set. Rank 0 hosts the rendezvous store at MASTER_ADDR:MASTER_PORT and rejects
clients that do not present the token.

Multi-node: run one launcher per node with the same --nnodes, --nproc_per_node, --master_addr
(node 0's address, reachable from every node), --master_port and token, and --node_rank
0..nnodes-1. Share the token with --rdzv_token or the OFL_STORE_TOKEN environment variable (e.g.
`export OFL_STORE_TOKEN=$(python3 -c "import secrets; print(secrets.token_hex(16))")`, copied to
every node); without one a multi-node store accepts any client, and a warning says so. A single
node makes a random token itself, and picks a free port when --master_port is not given.

The cost model's machine: a one-node job of several ranks with no CUDA device visible and no
OFL_CLUSTER_SPEC gets this machine's measured spec (oneflowlike.tools.profile_cluster.cached: measured
on first use, a few seconds, then kept); OFL_PROFILE_CLUSTER=0 leaves the ranks the preset.

When a rank exits non-zero or is killed, the others are stopped (SIGTERM, then SIGKILL after 3 s)
and the launcher exits with that rank's code (128 + the signal's number when killed). SIGINT,
SIGTERM or SIGHUP to the launcher is passed on to every rank, and the launcher exits 128 + it.
"""

import argparse
import ctypes
import os
import queue
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time

from oneflowlike import cuda
from oneflowlike.distributed._env import (
    JOB_ENV_VARS,
)  # noqa: F401 (tests and benchmarks read it here)
from oneflowlike.tools import profile_cluster

GRACE_S = 3.0  # between SIGTERM and SIGKILL
_PREFIX = "[oneflowlike.distributed.launch]"


def _say(msg):
    print(f"{_PREFIX} {msg}", file=sys.stderr, flush=True)


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m oneflowlike.distributed.launch",
        description="Start one process per local rank (torchrun-compatible arguments).",
        allow_abbrev=False,
    )
    p.add_argument("--nnodes", type=int, default=1, help="number of nodes")
    p.add_argument("--node_rank", "--node-rank", type=int, default=0, help="this node's index")
    p.add_argument("--nproc_per_node", "--nproc-per-node", type=int, default=1)
    p.add_argument("--master_addr", "--master-addr", default="127.0.0.1")
    p.add_argument(
        "--master_port", "--master-port", type=int, default=None,
        help="default: a free port on one node, 29500 on several",
    )  # fmt: skip
    p.add_argument("--standalone", action="store_true", help="one node, a free local port")
    p.add_argument(
        "--rdzv_timeout", "--rdzv-timeout", type=float, default=None,
        help="seconds for rendezvous and collectives (exported as OFL_COMM_TIMEOUT_S)",
    )  # fmt: skip
    p.add_argument(
        "--rdzv_token", "--rdzv-token", default=None,
        help="the store's shared token (default: $OFL_STORE_TOKEN, else random on one node)",
    )  # fmt: skip
    p.add_argument(
        "--log_dir", "--log-dir", "--logdir", default=None,
        help="write rank_<r>.log files here (--logdir: OneFlow's spelling)",
    )  # fmt: skip
    p.add_argument(
        "--redirect_stdout_and_stderr", action="store_true",
        help="OneFlow's flag: the ranks' output to log files (in --logdir, default ./log)",
    )  # fmt: skip
    p.add_argument(
        "--use_env", "--use-env", action="store_true",
        help="accepted for torch.distributed.launch's scripts: ranks always get LOCAL_RANK in "
        "their environment",
    )  # fmt: skip
    p.add_argument("-m", "--module", action="store_true", help="run the script as a module")
    p.add_argument("--no_python", "--no-python", action="store_true", help="run an executable")
    p.add_argument("training_script")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    if args.module and args.no_python:
        p.error("-m and --no_python exclude each other")
    if args.redirect_stdout_and_stderr and args.log_dir is None:
        args.log_dir = "log"
    if args.standalone:
        args.nnodes, args.node_rank, args.master_addr = 1, 0, "127.0.0.1"
    if args.nnodes < 1 or args.nproc_per_node < 1:
        p.error(f"--nnodes {args.nnodes} and --nproc_per_node {args.nproc_per_node} must be >= 1")
    if not 0 <= args.node_rank < args.nnodes:
        p.error(f"--node_rank {args.node_rank} is outside [0, {args.nnodes})")
    return args


def free_port(host="127.0.0.1"):
    """A TCP port that is free on host right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _die_with_parent_fn():
    """A preexec_fn asking Linux to SIGKILL the child if the launcher dies (even by SIGKILL),
    so no rank outlives it; a plain C call, safe between fork and exec."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def arm():
        prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the launcher died before the request took effect
            os._exit(1)

    return arm


def _free_master_port(addr):
    try:
        return free_port(socket.gethostbyname(addr))
    except OSError:
        return free_port()


def _cpu_count():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _token(args):
    token = args.rdzv_token or os.environ.get("OFL_STORE_TOKEN", "")
    if token or args.nnodes > 1:
        if not token and args.node_rank == 0:
            _say(
                "warning: no --rdzv_token or OFL_STORE_TOKEN for a multi-node job; "
                "the rendezvous store will accept any client"
            )
        return token
    return secrets.token_hex(16)


def measured_spec(args, env=None):
    """The measured cluster spec's path for the ranks' OFL_CLUSTER_SPEC, or None where the job
    keeps what it has: one set already, turned off (OFL_PROFILE_CLUSTER=0), several nodes (the
    link across them is not measured here), one rank, or a CUDA device visible (the measurement
    is of CPU ranks). A measurement that fails says why and leaves the preset."""
    env = os.environ if env is None else env
    if (env.get("OFL_CLUSTER_SPEC") or env.get("OFL_PROFILE_CLUSTER", "1") == "0"
            or args.nnodes > 1 or args.nproc_per_node < 2):  # fmt: skip
        return None
    try:
        if cuda.is_available():
            return None
        return profile_cluster.cached(args.nproc_per_node, say=_say)
    except Exception as e:  # noqa: BLE001: the job runs on the preset rather than not at all
        _say(f"could not measure this machine for the cost model ({e}); ranks use the preset")
        return None


def child_envs(args, base_env=None):
    """The environment of each local rank, in local-rank order."""
    base = dict(os.environ if base_env is None else base_env)
    nlocal = args.nproc_per_node
    threads = str(max(1, _cpu_count() // nlocal))
    shared = {
        "WORLD_SIZE": str(args.nnodes * nlocal),
        "LOCAL_WORLD_SIZE": str(nlocal),
        "GROUP_RANK": str(args.node_rank),
        "NODE_RANK": str(args.node_rank),
        "GROUP_WORLD_SIZE": str(args.nnodes),
        "MASTER_ADDR": args.master_addr,
        "MASTER_PORT": str(args.master_port),
        "OFL_STORE_TOKEN": args.token,
    }
    if args.rdzv_timeout is not None:
        shared["OFL_COMM_TIMEOUT_S"] = repr(float(args.rdzv_timeout))
    if getattr(args, "cluster_spec", None):
        shared["OFL_CLUSTER_SPEC"] = args.cluster_spec
    envs = []
    for local in range(nlocal):
        env = dict(base, **shared)
        env["RANK"] = str(args.node_rank * nlocal + local)
        env["LOCAL_RANK"] = str(local)
        for name in ("OMP_NUM_THREADS", "OFL_NUM_THREADS"):
            env.setdefault(name, threads)
        if args.log_dir is not None:  # a log shows prints as they happen (a tty does anyway)
            env.setdefault("PYTHONUNBUFFERED", "1")
        envs.append(env)
    return envs


def child_command(args):
    if args.no_python:
        return [args.training_script, *args.training_script_args]
    run = ["-m"] if args.module else []
    return [sys.executable, *run, args.training_script, *args.training_script_args]


class _StartError(Exception):
    pass


class _Interrupted(Exception):
    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _exit_cause(rc):
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        return f"was killed by {name}", 128 - rc
    return f"exited with code {rc}", rc


class Job:
    """This node's ranks: spawned in their own process groups, watched by one thread each."""

    def __init__(self, args):
        self.args = args
        self.procs = []
        self.logs = []
        self.done = {}  # local rank -> return code
        self.events = queue.Queue()
        self.stopping = False  # a signal now only hurries the stop
        self.hurry = False

    def rank(self, local):
        return self.args.node_rank * self.args.nproc_per_node + local

    def log_path(self, local):
        if self.args.log_dir is None:
            return None
        return os.path.join(self.args.log_dir, f"rank_{self.rank(local)}.log")

    def start(self):
        cmd = child_command(self.args)
        arm = _die_with_parent_fn()
        if self.args.log_dir is not None:
            os.makedirs(self.args.log_dir, exist_ok=True)
        for local, env in enumerate(child_envs(self.args)):
            out = None
            if self.args.log_dir is not None:
                out = open(self.log_path(local), "wb")
                self.logs.append(out)
            try:
                p = subprocess.Popen(
                    cmd, env=env, stdout=out, stderr=subprocess.STDOUT if out else None,
                    start_new_session=True, preexec_fn=arm,
                )  # fmt: skip
            except OSError as e:
                raise _StartError(f"cannot start {cmd[0]!r}: {e}") from None
            self.procs.append(p)
            threading.Thread(target=self._watch, args=(local, p), daemon=True).start()

    def _watch(self, local, p):
        self.events.put((local, p.wait()))

    def _next_exit(self, timeout):
        try:
            local, rc = self.events.get(timeout=timeout)
        except queue.Empty:
            return None
        self.done[local] = rc
        return local, rc

    def running(self):
        return [i for i in range(len(self.procs)) if i not in self.done]

    def monitor(self):
        """Waits for every rank; returns the local rank and code of the first failure, or None."""
        while self.running():
            event = self._next_exit(0.25)
            if event is not None and event[1] != 0:
                return event
        return None

    def _signal_groups(self, sig, which):
        for i in which:
            try:
                os.killpg(self.procs[i].pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def stop(self, sig=signal.SIGTERM):
        """Sends sig to every running rank's group, SIGKILL after GRACE_S; waits for all."""
        self._signal_groups(sig, self.running())
        deadline = time.monotonic() + GRACE_S
        while self.running() and time.monotonic() < deadline and not self.hurry:
            self._next_exit(0.05)
        # Every group, finished ranks' too: a rank's leftover children must not outlive the job.
        self._signal_groups(signal.SIGKILL, range(len(self.procs)))
        deadline = time.monotonic() + 10.0
        while self.running() and time.monotonic() < deadline:
            self._next_exit(0.05)

    def close(self):
        for f in self.logs:
            f.close()


def run(args):
    """Runs the job; returns the launcher's exit code."""
    if args.master_port is None:
        args.master_port = _free_master_port(args.master_addr) if args.nnodes == 1 else 29500
    args.token = _token(args)
    args.cluster_spec = measured_spec(args)
    job = Job(args)

    def on_signal(signum, frame):
        if job.stopping:
            job.hurry = True  # a second signal while stopping: kill now
            return
        job.stopping = True
        raise _Interrupted(signum)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        job.start()
        failed = job.monitor()
        if failed is None:
            return 0
        job.stopping = True
        local, rc = failed
        cause, code = _exit_cause(rc)
        where = f"; log: {job.log_path(local)}" if args.log_dir is not None else ""
        _say(
            f"rank {job.rank(local)} (local {local}, pid {job.procs[local].pid}) {cause}{where}; "
            f"stopping {len(job.running())} other local rank(s)"
        )
        job.stop(signal.SIGTERM)
        return code
    except _StartError as e:
        _say(str(e))
        job.stop(signal.SIGTERM)
        return 1
    except _Interrupted as e:
        _say(f"got {signal.Signals(e.signum).name}; stopping {len(job.running())} local rank(s)")
        job.stop(signal.SIGTERM if e.signum == signal.SIGHUP else e.signum)
        return 128 + e.signum
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        job.close()


def main(argv=None):
    sys.exit(run(parse_args(argv)))


if __name__ == "__main__":
    main()
