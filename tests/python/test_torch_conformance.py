"""tools/torch_conformance.py: the claimed OpInfo / ModuleInfo / OptimizerInfo cases still pass
(tools/conformance_baseline.json), and the driver itself tells right from wrong."""

import os
import sys

import numpy as np
import pytest

pytest.importorskip("expecttest", reason="PyTorch's test databases need expecttest")
torch = pytest.importorskip("torch")

import oneflowlike as flow  # noqa: E402

TOOLS = os.path.join(os.path.dirname(__file__), "..", "..", "tools")
sys.path.insert(0, os.path.abspath(TOOLS))

from conformance import convert, lists, ops, report, runner  # noqa: E402

# Loaded at collection, outside any test: torch.testing._internal runs `uname -p` on import,
# which the unit tier refuses inside a test (conftest.py).
DATABASES = {area: runner.database(area) for area in runner.AREAS}
BASELINE = report.load_baseline(os.path.join(TOOLS, "conformance_baseline.json"))


def _same_torch_minor():
    have = torch.__version__.split("+")[0].split(".")[:2]
    return have == BASELINE["torch"].split(".")[:2]


@pytest.mark.skipif(not _same_torch_minor(), reason="baseline made with another PyTorch")
@pytest.mark.parametrize("area", runner.AREAS)
def test_claimed_cases_still_pass(area):
    want = report.wanted(BASELINE, area)
    results = runner.run_area(area, list(want), only=want)
    bad = report.regressions(BASELINE, area, want, results)
    lines = [f"{key} case {cid}: {status}: {msg}" for key, cid, status, msg in bad]
    assert not bad, f"{len(bad)} claimed {area} cases regressed:\n" + "\n".join(lines[:40])


def test_functional_rule_keeps_api_and_drops_helpers():
    names = set(lists.nn_functional())
    assert {"relu", "conv2d", "scaled_dot_product_attention", "max_pool2d"} <= names
    assert not names & {"Optional", "handle_torch_function", "boolean_dispatch", "Tensor"}
    assert not names & {"has_torch_function", "assert_int_or_pair", "math", "np"}
    assert "Optimizer" in lists.optimizers() and "lr_scheduler" not in lists.optimizers()


@pytest.mark.parametrize(
    "name, found",
    [
        ("nn.functional.relu", "flow.nn.functional.relu"),
        ("add", "flow.add"),
        ("expand", "Tensor.expand"),
        ("torch.no_such_op", None),
    ],
)
def test_opinfo_name_resolution(name, found):
    obj, where = lists.op_target(name)
    assert (where if obj is not None else None) == found


def test_compare_reports_shape_dtype_and_largest_error():
    t = torch.tensor([1.0, 2.0], dtype=torch.float64)
    assert convert.compare(t, flow.tensor(np.array([1.0, 2.0])), (1e-7, 1e-7)) is None
    assert "shape" in convert.compare(t, flow.tensor(np.array([1.0])), (1e-7, 1e-7))
    assert "dtype" in convert.compare(t, flow.tensor(np.array([1, 2])), (1e-7, 1e-7))
    assert "largest error 0.5" in convert.compare(
        (t, t), (flow.tensor(np.array([1.0, 2.0])), flow.tensor(np.array([1.0, 2.5]))), (0, 0)
    )
    assert "2 outputs" in convert.compare(t, (t, t), (0, 0))


def test_converter_skips_what_has_no_counterpart():
    conv = convert.Converter(flow)
    with pytest.raises(convert.Skip, match="complex"):
        conv(torch.ones(2, dtype=torch.complex64))
    with pytest.raises(convert.Skip, match="Generator"):
        conv({"generator": torch.Generator()})
    leaf = torch.ones(2, dtype=torch.float64, requires_grad=True)
    ours = conv([leaf, (leaf, torch.float32)])
    assert ours[0] is ours[1][0] and ours[0].requires_grad and ours[1][1] == flow.float32


def _sin_entry():
    (op,) = [o for o in lists.op_db() if o.name == "sin"]
    return op


@pytest.mark.parametrize(
    "impostor, status",
    [(lambda x: flow.cos(x), "wrong"), (lambda x: x.reshape(-1, 7), "raises")],
)
def test_driver_catches_wrong_and_raising_ops(monkeypatch, impostor, status):
    monkeypatch.setattr(lists, "op_target", lambda name: (impostor, "impostor"))
    res = ops.run_entry(_sin_entry(), kinds=("f64", "grad64"))
    got = {s for s, _ in res["cases"].values()}
    assert got and got <= {status, "skip"}, res["cases"]
    assert runner.verdict(res) == "fail"


def test_report_is_markdown_tables():
    res = ops.run_entry(_sin_entry(), kinds=("f32",))
    text = report.markdown("2.x", None, {"ops": [res]})
    assert "| `sin` | pass | 1/1 |" in text.replace("  ", " ")
