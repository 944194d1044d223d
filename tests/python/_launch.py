"""Helpers for tests that start real processes through oneflowlike.distributed.launch."""

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from oneflowlike.distributed.launch import JOB_ENV_VARS

WORKERS = Path(__file__).resolve().parent / "dist_workers"
LAUNCH = [sys.executable, "-m", "oneflowlike.distributed.launch"]


# A scheduler's variables, which a rank started without a launcher reads (distributed/_env.py).
SCHEDULER_PREFIXES = ("SLURM_", "OMPI_COMM_WORLD_", "PMI_", "MPI_LOCAL")


def clean_env(**extra):
    # Without what a surrounding launcher or scheduler (or the caller's shell) set: tests start
    # clean.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in JOB_ENV_VARS and not k.startswith(SCHEDULER_PREFIXES)
    }
    env.update({k: str(v) for k, v in extra.items()})
    return env


def worker(name):
    return str(WORKERS / name)


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def __repr__(self):
        return (
            f"launcher exited {self.returncode} after {self.seconds:.1f} s\n"
            f"--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr}"
        )


def launch(launcher_args, script_args=(), env=None, timeout=60, prefix=()):
    """Runs the launcher to completion; prefix goes before python (e.g. `ip netns exec ns`)."""
    cmd = [*prefix, *LAUNCH, *launcher_args, *script_args]
    start = time.monotonic()
    p = subprocess.run(cmd, env=env or clean_env(), capture_output=True, text=True, timeout=timeout)
    return Result(p.returncode, p.stdout, p.stderr, time.monotonic() - start)


def expect_clean_ranks(script, nproc, *args, timeout=120, rdzv_timeout=30, env=None):
    """Runs dist_workers/<script> on nproc ranks through the launcher (with the extra environment
    variables `env`); every rank must report (one JSON line with its rank and problems) and
    report no problem. Returns the reports."""
    r = launch(
        ["--nproc_per_node", str(nproc), "--rdzv_timeout", str(rdzv_timeout)],
        [worker(script), *args],
        env=clean_env(**(env or {})),
        timeout=timeout,
    )
    assert r.returncode == 0, r
    reports = json_lines(r.stdout)
    assert sorted(rep["rank"] for rep in reports) == list(range(nproc)), r
    for rep in reports:
        assert rep["problems"] == [], (rep, r)
    return reports


def json_lines(text):
    """The JSON objects printed one per line in text (other lines are skipped)."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def logs_by_rank(log_dir):
    return {
        int(p.stem.split("_")[1]): p.read_text() for p in sorted(Path(log_dir).glob("rank_*.log"))
    }


def alive(pid):
    """Whether pid is a live (not zombie) process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
