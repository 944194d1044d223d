"""The planner's pipelines (flow.auto_parallel.plan_pipeline) for the example GPT on a simulated
4-device cluster priced as this machine's loopback: without a budget no pipeline, within a budget
that data parallelism does not fit stages (and recomputation when that is not enough), and a
budget nothing fits raises naming the least memory any choice needs. Meta tensors: nothing runs."""

import re
import sys
from pathlib import Path

import pytest

import oneflowlike as flow

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "parallel"))
from char_gpt.model import GPT, GPTConfig  # noqa: E402
from gpt_layouts import TrainStep, megatron  # noqa: E402

B, S = flow.sbp.broadcast, flow.sbp.split
BATCH, LAYERS = 16, 8


def step_for(placement, micro_batches):
    """The example GPT's step on one stage's placement, two of its repeated blocks."""
    axes = len(placement.hierarchy)
    with flow.device("meta"):
        model = GPT(GPTConfig(65, 32, 2, 4, 64))
    model.to_global(placement, tuple([B] * axes) if axes > 1 else B)
    opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = flow.zeros(BATCH // micro_batches, 32, dtype=flow.int64, device="meta",
                   placement=placement, sbp=[S(0)] * axes)  # fmt: skip
    return TrainStep(model, opt), [x, x]


def plan(budget, stage_devices=None, recompute=None, chunks=(1,)):
    cluster = flow.boxing.ClusterSpec.cpu_loopback(4)
    return flow.auto_parallel.plan_pipeline(
        step_for, LAYERS, 4, cluster=cluster, memory_budget=budget, micro_batches=(1, 4),
        stage_devices=stage_devices, recompute=recompute, chunks=chunks,
    )  # fmt: skip


def least_bytes(stage_devices):
    """The least memory any choice on stages of that size needs (the error says it)."""
    with pytest.raises(RuntimeError) as e:
        plan(1e4, stage_devices)
    return float(re.search(r"needs is (\d+) bytes", str(e.value)).group(1))


def test_without_a_budget_one_stage_is_fastest():
    p = plan(None)
    assert (p.stages, p.devices_per_stage, p.recompute) == (1, 4, False)
    assert "stage 0: layers 0..7 + what comes before them + what comes after" in p.explain()
    assert p.intra.layouts  # the layouts inside the stage


def test_a_budget_one_stage_misses_takes_stages_and_each_fits():
    free = plan(None)
    budget = 0.9 * least_bytes([4])  # no single stage fits, however sharded or micro-batched
    p = plan(budget)
    assert p.stages > 1
    assert all(b <= budget for b in p.stage_bytes)
    assert p.seconds >= free.seconds  # what the memory costs
    ranges = p.stage_layers()
    assert [r.start for r in ranges][0] == 0 and ranges[-1].stop == LAYERS
    assert all(a.stop == b.start for a, b in zip(ranges, ranges[1:]))


def test_a_budget_nothing_fits_names_the_least_any_choice_needs():
    with pytest.raises(RuntimeError, match=r"the least any choice of stages, micro-batches and "
                       r"recomputation needs is \d+ bytes"):  # fmt: skip
        plan(1e4)


def test_the_plan_reports_what_every_option_it_weighed_predicts():
    p = plan(0.9 * least_bytes([4]))
    assert len(p.option_seconds) == len(p.options) > 1
    assert min(p.option_seconds) == pytest.approx(p.seconds)
    assert any(s == float("inf") for s in p.option_seconds)  # one stage of 4 fits no layout


def test_recomputation_forced_or_forbidden():
    free, forced = plan(None), plan(None, recompute=True)
    assert not free.recompute and forced.recompute
    assert forced.seconds > free.seconds  # the forward again, for nothing
    assert plan(None, recompute=False).seconds == free.seconds
    tight = 1.01 * least_bytes([1])  # on stages of one device, only recomputing fits
    assert plan(tight, [1]).recompute
    with pytest.raises(RuntimeError, match=r"recomputation \(never recomputing\) needs is"):
        plan(tight, [1], recompute=False)
    with pytest.raises(ValueError, match="recompute must be None, True or False, got 'yes'"):
        plan(None, recompute="yes")


def test_a_stage_model_without_repeated_layers_raises():
    def one_block(placement, micro_batches):
        with flow.device("meta"):
            model = GPT(GPTConfig(65, 32, 1, 4, 64))
        model.to_global(placement, B)
        x = flow.zeros(BATCH, 32, dtype=flow.int64, device="meta", placement=placement, sbp=S(0))
        return TrainStep(model, flow.optim.SGD(model.parameters(), lr=0.1)), [x, x]

    with pytest.raises(RuntimeError, match=r"\[auto_parallel\] .* has no repeated layers"):
        flow.auto_parallel.plan_pipeline(
            one_block, LAYERS, 4, cluster=flow.boxing.ClusterSpec.cpu_loopback(4),
            stage_devices=[4], micro_batches=(1,),
        )  # fmt: skip


def test_the_interleaved_schedule_splits_evenly_and_the_plan_lays_virtual_stages_round_devices():
    p = plan(None, [2], chunks=(2,))  # 2 stages of 2 devices, 2 virtual stages each
    assert (p.stages, p.chunks) == (2, 2)
    assert [(r.start, r.stop) for r in p.stage_layers()] == [(0, 2), (2, 4), (4, 6), (6, 8)]
    assert "interleaved in 2 chunks a device" in p.description
    assert "stage 0: layers 0..1, 4..5 + what comes before them" in p.explain()
    assert "stage 1: layers 2..3, 6..7 + what comes after" in p.explain()
    both = plan(None, [2], chunks=(1, 2))  # the search weighs both schedules, takes the faster
    assert both.seconds == pytest.approx(min(p.seconds, plan(None, [2]).seconds))
    # apply: virtual stage c on device c % 2's placement, as the interleaved_1f1b schedule wants.
    with flow.device("meta"):
        model = GPT(GPTConfig(65, 32, LAYERS, 4, 64))
    children = [m for _, m in model.named_children()]
    cut = children.index(model.blocks)
    cluster = flow.boxing.ClusterSpec.cpu_loopback(4)
    first, last = p.apply(model, model.blocks, children[:cut], children[cut + 1 :], cluster)
    places = p.placements(cluster)
    assert (first, last) == (places[0], places[1])
    for k, block in enumerate(model.blocks):
        stage = block.__dict__["_pipeline_stage"]
        assert stage[0] == k // 2 and stage[1] == places[(k // 2) % 2], k


def test_virtual_stages_need_not_divide_the_layers_but_each_needs_one():
    p = plan(None, [2], chunks=(3,))  # 2 stages x 3 chunks over 8 layers: 2, 1, 1 a device
    assert (p.stages, p.chunks) == (2, 3)
    assert sorted(r.stop - r.start for r in p.stage_layers()) == [1, 1, 1, 1, 2, 2]
    assert sum(r.stop - r.start for r in p.stage_layers()) == LAYERS
    with flow.device("meta"):  # apply: each block on its virtual stage's device
        model = GPT(GPTConfig(65, 32, LAYERS, 4, 64))
    children = [m for _, m in model.named_children()]
    cut = children.index(model.blocks)
    cluster = flow.boxing.ClusterSpec.cpu_loopback(4)
    p.apply(model, model.blocks, children[:cut], children[cut + 1 :], cluster)
    places = p.placements(cluster)
    for c, layers in enumerate(p.stage_layers()):
        for k in layers:
            assert model.blocks[k].__dict__["_pipeline_stage"][:2] == (c, places[c % 2]), k
    with pytest.raises(RuntimeError, match="a repeated layer for each of its virtual stages"):
        plan(None, [2], chunks=(5,))  # 2 stages x 5 chunks: more virtual stages than layers
    with pytest.raises(RuntimeError, match=r"no pipeline fits \(with no memory budget\)"):
        plan(float("inf"), [2], chunks=(5,))
    with pytest.raises(RuntimeError, match="chunks .* must be one or more counts of at least 1"):
        plan(None, [2], chunks=(0,))


def hand_step_for(placement, micro_batches):
    """step_for's step in Megatron-LM's tensor-parallel layout (over a 1-d stage's ranks)."""
    graph, inputs = step_for(placement, micro_batches)
    if len(placement.hierarchy) == 1:
        graph.model.to_global(placement, lambda n, p: megatron(n, p))
    return graph, inputs


def test_the_layouts_given_are_an_option_so_the_plan_is_never_slower_than_them():
    """given=True: the step's own layouts (a hand layout), computed with as they lie, are
    weighed beside the planned ones: the plan is predicted no slower than either search alone,
    and it weighed more options. Layouts given replicated add nothing the search lacks."""
    cluster = flow.boxing.ClusterSpec.cpu_loopback(4)
    kw = dict(cluster=cluster, micro_batches=(1, 4), stage_devices=[2, 4])
    plan = flow.auto_parallel.plan_pipeline
    free = plan(hand_step_for, LAYERS, 4, **kw)
    kept = plan(hand_step_for, LAYERS, 4, keep=True, in_place=True, **kw)
    both = plan(hand_step_for, LAYERS, 4, given=True, **kw)
    assert both.seconds <= min(free.seconds, kept.seconds) * (1 + 1e-9)
    assert len(both.options) > len(free.options)
    replicated = plan(step_for, LAYERS, 4, given=True, **kw)
    assert len(replicated.options) == len(plan(step_for, LAYERS, 4, **kw).options)
