"""Pipeline schedules from Python (flow.nn.graph.pipeline_schedule), without ranks."""

import pytest

import oneflowlike as flow


def test_one_f_one_b_prints_its_orders_and_grid():
    s = flow.nn.graph.pipeline_schedule("1f1b", devices=2, micro_batches=3)
    assert str(s).splitlines()[:3] == [
        "1f1b: 2 devices, 3 micro-batches",
        "device 0: F0 F1 B0 F2 B1 B2  (2 in flight at most)",
        "device 1: F0 B0 F1 B1 F2 B2  (1 in flight at most)",
    ]
    assert [repr(a) for a in s.order[0]] == ["F0", "F1", "B0", "F2", "B1", "B2"]
    f0 = s.order[0][0]
    assert (f0.phase, f0.micro, f0.stage, f0.recv_from, f0.send_to) == ("F", 0, 0, -1, 1)


@pytest.mark.parametrize("kind", ["gpipe", "1f1b"])
@pytest.mark.parametrize("p,m", [(2, 4), (4, 4), (4, 16)])
def test_bubble_is_the_textbook_fraction(kind, p, m):
    s = flow.nn.graph.pipeline_schedule(kind, p, m)
    assert s.bubble_fraction() == pytest.approx((p - 1) / (m + p - 1))
    in_flight = [s.peak_in_flight(d) for d in range(p)]
    assert in_flight == ([m] * p if kind == "gpipe" else [min(p - d, m) for d in range(p)])


def test_interleaving_uses_virtual_stages_and_a_smaller_bubble():
    s = flow.nn.graph.pipeline_schedule("interleaved_1f1b", 2, 4, chunks=2)
    assert {a.stage for a in s.order[1]} == {1, 3}
    timeline = s.timeline(forward=[0.5], backward=[1.0])
    assert len(timeline) == 2 * 2 * 2 * 4
    assert s.bubble_fraction([0.5], [1.0]) < (2 - 1) / (4 + 2 - 1)


def test_bad_schedules_raise_naming_the_counts():
    with pytest.raises(RuntimeError, match="unknown schedule 'zero_bubble'"):
        flow.nn.graph.pipeline_schedule("zero_bubble", 2, 4)
    with pytest.raises(RuntimeError, match="6 micro-batches do not divide"):
        flow.nn.graph.pipeline_schedule("interleaved_1f1b", 4, 6, chunks=2)
