"""Every program of examples/tour runs as its docstring says: alone (`python
examples/tour/01_quickstart.py`) or through the launcher on the ranks it names (`python -m
oneflowlike.distributed.launch --nproc_per_node 2 examples/tour/05_global_tensor.py`). Each
program asserts what it shows, so a run that exits 0 is a pass; a failure shows its output.
Programs run in a fresh temporary folder, which is also their TMPDIR, and must leave it empty."""

import ast
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _launch import LAUNCH, Result, clean_env

pytestmark = pytest.mark.multiprocess

TOUR = Path(__file__).resolve().parents[2] / "examples" / "tour"
PROGRAMS = sorted(p.name for p in TOUR.glob("[0-9][0-9]_*.py"))

# Programs that hit a bug or a missing feature of the framework: name -> the failure.
SKIP = {}


def ranks(name):
    """The rank count in the program's docstring's command line (1 without the launcher)."""
    doc = ast.get_docstring(ast.parse((TOUR / name).read_text())) or ""
    launched = re.search(rf"--nproc_per_node[ =](\d+) examples/tour/{re.escape(name)}", doc)
    if launched:
        return int(launched.group(1))
    assert f"python examples/tour/{name}" in doc, f"{name}: its docstring says how to run it"
    return 1


@pytest.mark.parametrize("name", PROGRAMS)
def test_tour_program_runs(name, tmp_path):
    if name in SKIP:
        pytest.skip(SKIP[name])
    n = ranks(name)
    cmd = [sys.executable, str(TOUR / name)]
    if n > 1:
        cmd = [*LAUNCH, "--nproc_per_node", str(n), "--rdzv_timeout", "30", str(TOUR / name)]
    work = tmp_path / "work"
    work.mkdir()
    start = time.monotonic()
    p = subprocess.run(
        cmd, cwd=work, env=clean_env(TMPDIR=work), capture_output=True, text=True, timeout=60
    )
    r = Result(p.returncode, p.stdout, p.stderr, time.monotonic() - start)
    assert r.returncode == 0, r
    assert r.stdout.strip(), r  # it prints what it shows
    assert not list(work.iterdir()), (sorted(q.name for q in work.iterdir()), r)
