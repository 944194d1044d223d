"""The test tiers as pytest markers, so that each runs alone (`-m unit`, `-m multiprocess`,
`-m gpu`; docs/install.md). Every test is in exactly one tier:

- gpu: needs a CUDA device (test_cuda.py's `needs_gpu`); skipped here, saying why, without one;
- multiprocess: starts processes, ranks through the launcher (_launch.py) or a subprocess;
  marked in its file (`pytestmark = pytest.mark.multiprocess` or a decorator);
- unit: everything else, one process and no device (inference, plans, numerics of ops and
  gradients). A unit test that starts a process fails, naming the marker it lacks.

And the fixtures several files share, set up once a session: `one_process`, the single-process
reference runs; `examples` and `gpt`, the C++ examples and the model they serve."""

import contextlib
import fcntl
import os
import subprocess
import sys

import numpy as np
import pytest

import oneflowlike as flow
from _launch import clean_env, json_lines

# Jobs the tests launch price plans with the preset, the same on every machine: the launcher's
# measurement of this one (oneflowlike.tools.profile_cluster.cached) has tests of its own.
os.environ["OFL_PROFILE_CLUSTER"] = "0"

TIERS = ("unit", "multiprocess", "gpu")
_NO_GPU = None  # why the GPU tier skips here; None where it runs
if not flow.cuda.is_available():
    _NO_GPU = "no CUDA device visible"
    if not flow._C.has_backend("cuda"):
        _NO_GPU += " (this build has no CUDA backend)"


def pytest_collection_modifyitems(config, items):
    for item in items:
        tiers = [t for t in TIERS if item.get_closest_marker(t)]
        if len(tiers) > 1:
            raise pytest.UsageError(f"{item.nodeid} is marked {' and '.join(tiers)}: pick one")
        if not tiers:
            item.add_marker(pytest.mark.unit)
        elif tiers == ["gpu"] and _NO_GPU:
            item.add_marker(pytest.mark.skip(reason=_NO_GPU))


# The unit test running now (None between tests and in the other tiers): processes it starts are
# refused, so that `-m unit` stays one process as the suite grows.
_running_unit_test = None
_execute_child = subprocess.Popen._execute_child


def _refuse_in_unit_tests(self, args, *rest, **kwargs):
    if _running_unit_test is not None:
        raise AssertionError(
            f"{_running_unit_test} starts a process ({args!r}) but is in the unit tier: mark it "
            "pytest.mark.multiprocess (tests/python/conftest.py)"
        )
    return _execute_child(self, args, *rest, **kwargs)


subprocess.Popen._execute_child = _refuse_in_unit_tests

# matplotlib builds its font cache on first use by running fc-list: built here, outside any test,
# so that a fresh machine's first plotting test stays in one process.
with contextlib.suppress(ImportError):
    import matplotlib.font_manager  # noqa: F401


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    global _running_unit_test
    _running_unit_test = item.nodeid if item.get_closest_marker("unit") else None
    try:
        return (yield)
    finally:
        _running_unit_test = None


@pytest.fixture(scope="session")
def one_process(tmp_path_factory):
    """one_process(script, *args, save=False): (the first JSON line printed, and with save the
    arrays it wrote to `--save FILE`) of `python script *args` run alone, without the launcher.
    Run once a session for each command line: the single-process reference that every case of a
    parametrized multi-process test compares with, the same for all of them."""
    runs = {}

    def run(script, *args, save=False):
        key = (str(script), *map(str, args), save)
        if key not in runs:
            out = tmp_path_factory.mktemp("one_process") / "saved.npz"
            cmd = [sys.executable, *key[:-1], *(["--save", str(out)] if save else [])]
            p = subprocess.run(cmd, env=clean_env(), capture_output=True, text=True, timeout=120)
            assert p.returncode == 0, f"{' '.join(cmd)}\n{p.stderr}"
            arrays = None
            if save:
                with np.load(out) as saved:
                    arrays = {name: saved[name] for name in saved.files}
                for a in arrays.values():
                    a.flags.writeable = False  # shared by the tests: none may change it
            runs[key] = json_lines(p.stdout)[0], arrays
        return runs[key]

    return run


@contextlib.contextmanager
def _made_once(tmp_path_factory, name):
    """A folder made once per test run, however many pytest-xdist workers ask for it: yields
    (folder, whether to fill it). The first worker fills it under a lock in the run's common
    temporary folder while the others wait; a filling that raises leaves it to the next."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the workers' basetemps are siblings in one folder of the run
    path, done = root / name, root / name / ".done"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        fresh = not done.exists()
        path.mkdir(exist_ok=True)
        yield path, fresh
        done.touch()


# test_cpp_api.py and test_inference_server_hostile.py both serve the model: build and save once
# a run, even when two pytest-xdist workers run them.
@pytest.fixture(scope="session")
def examples(tmp_path_factory):
    """examples/cpp configured and built as a separate project, as a user's would be."""
    from test_cpp_api import ROOT

    with _made_once(tmp_path_factory, "examples") as (build, fresh):
        if fresh:
            _build_examples(ROOT, build)
    return build


def _build_examples(root, build):
    prefix = subprocess.run(
        [sys.executable, "-m", "oneflowlike", "--cmake-prefix-path"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert os.path.isfile(os.path.join(prefix, "oneflowlike", "oneflowlikeConfig.cmake"))
    for cmd in (
        ["cmake", "-S", os.path.join(root, "examples", "cpp"), "-B", str(build), "-G", "Ninja"]
        # Unoptimised (no build type's flags): the programs are thin over the installed
        # library, and they compile in 20 s of CPU instead of 37 s.
        + [f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=None"],
        ["cmake", "--build", str(build)],
    ):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="session")
def gpt(tmp_path_factory):
    """The example GPT, eval mode, and its graph saved by save_gpt.py (a dynamic batch)."""
    from test_cpp_api import SAVE_GPT, SIZES, small_gpt

    with _made_once(tmp_path_factory, "saved") as (saved, fresh):
        if fresh:
            subprocess.run(
                [sys.executable, SAVE_GPT, str(saved / "gpt"), *SIZES], check=True, timeout=120
            )
    return small_gpt(), str(saved / "gpt")
