"""config.enable_zero (OneFlow's ZeRO) as layouts of a data-parallel graph: stage 1 splits the
optimizer states S(0) over the data-parallel ranks, stage 2 also reduce-scatters the gradients,
stage 3 also splits the parameters. Trained on 2 and 4 ranks, every stage gives one process's
parameters."""

import re

import pytest

import oneflowlike as flow
from oneflowlike.nn.graph import _zero
from _launch import clean_env, json_lines, launch, worker

B, S = flow.sbp.broadcast, flow.sbp.split


class Step(flow.nn.Graph):
    def __init__(self, model, opt=None):
        super().__init__()
        self.model = model
        if opt is not None:
            self.add_optimizer(opt)

    def build(self, x):
        loss = self.model(x).sum()
        loss.backward()
        return loss


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"stage": 0}, r"enable_zero: stage is 1, 2 or 3, got 0"),
        ({"stage": 4}, r"enable_zero: stage is 1, 2 or 3, got 4"),
        ({"stage": "2"}, r"enable_zero: stage is 1, 2 or 3, got '2'"),
        ({"stage": True}, r"enable_zero: stage is 1, 2 or 3, got True"),
        ({"shard_min_size": 0}, r"enable_zero: shard_min_size is an int >= 1, got 0"),
        ({"shard_restore_level": 3}, r"enable_zero: shard_restore_level is 0, 1 or 2, got 3"),
    ],
)
def test_enable_zero_rejects_bad_arguments_naming_them(kwargs, message):
    config = flow.nn.Graph().config
    with pytest.raises(ValueError, match=message):
        config.enable_zero(True, **kwargs)
    assert config.zero_stage == 0  # unchanged


def test_enable_zero_defaults_to_stage_2_as_oneflows_and_mode_false_turns_it_off():
    config = flow.nn.Graph().config
    config.enable_zero()
    assert (config.zero_stage, config.zero_shard_min_size) == (2, 1024)
    config.enable_zero(True, stage=3, shard_min_size=8)
    assert (config.zero_stage, config.zero_shard_min_size) == (3, 8)
    config.enable_zero(False)
    assert config.zero_stage == 0


def test_enable_zero_on_local_inputs_trains_as_without_it_and_warns():
    flow.manual_seed(0)
    model = flow.nn.Linear(4, 3)
    opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    step = Step(model, opt)
    step.config.enable_zero(True, stage=3)
    with pytest.warns(UserWarning, match=r"enable_zero on local inputs: one device"):
        step(flow.randn(2, 4))
    assert not model.weight.is_global and not opt.state[model.weight]["momentum_buffer"].is_global


@pytest.mark.parametrize("stage", [1, 2, 3])
def test_zero_layouts_on_a_simulated_2x2_mesh_shard_over_the_data_parallel_axis(stage):
    """Data parallel over mesh axis 0 (the batch is S(0) there), tensor parallel over axis 1: the
    states (stage 3: the parameters too) take S(0) on axis 0 and keep axis 1's layout; a tensor
    whose shards would be under shard_min_size stays as it is. No ranks: meta tensors."""
    place = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
    model = flow.nn.Linear(64, 32).to("meta")
    model.weight.data = model.weight.detach().to_global(place, (B, S(1)))
    model.bias.data = model.bias.detach().to_global(place, (B, B))
    opt = flow.optim.Adam(model.parameters(), lr=0.1)
    step = Step(model, opt)
    step.config.enable_zero(True, stage=stage, shard_min_size=64)
    x = flow.empty(8, 64, device="meta", placement=place, sbp=[S(0), B])
    layouts = _zero.apply(step, [x])
    # weight: 2048 elements over 2 data-parallel ranks; bias: 32 / 2 < 64, not sharded.
    assert layouts == {id(model.weight): (S(0), S(1))}
    for name in ("exp_avg", "exp_avg_sq"):
        assert tuple(opt.state[model.weight][name].sbp) == (S(0), S(1))
    assert model.bias not in opt.state  # (made as it was, when the graph traces)
    want = (S(0), S(1)) if stage == 3 else (B, S(1))
    assert tuple(model.weight.sbp) == want
    assert tuple(model.bias.sbp) == (B, B)


def _collectives(log):
    """{kind: total bytes} of a step's comm_log lines ("reduce_scatter(sum) group[0,1] 4096 B")."""
    out = {}
    for line in log:
        kind, size = re.match(r"(\S+) .* (\d+) B$", line).groups()
        out[kind] = out.get(kind, 0) + int(size)
    return out


@pytest.mark.multiprocess
@pytest.mark.parametrize("ranks", [2, 4])
def test_zero_stages_train_like_one_process_and_shard_states_gradients_parameters(ranks):
    """graph_zero_worker trains plain data parallel (stage 0) and stages 1, 2, 3 and checks on
    every rank the parameters against one process and the local shapes (states 1/N of the
    rows from stage 1, parameters from stage 3). Here: the gradients' collectives and memory."""
    r = launch(
        ["--nproc_per_node", str(ranks), "--rdzv_timeout", "30"],
        [worker("graph_zero_worker.py")],
        env=clean_env(),
        timeout=120,
    )
    assert r.returncode == 0, r
    reports = json_lines(r.stdout)
    assert sorted(rep["rank"] for rep in reports) == list(range(ranks)), r
    for rep in reports:
        assert rep["problems"] == [], (rep["rank"], rep["problems"])
    stats = next(rep for rep in reports if rep["rank"] == 0)["stats"]
    comm = {int(stage): _collectives(s["collectives"]) for stage, s in stats.items()}
    peak = {int(stage): s["peak_bytes"] for stage, s in stats.items()}
    grads = 4 * (64 * 16 + 64 + 5 * 64 + 5)  # float32 gradients of the whole model
    # Stages 0 and 1 all-reduce every gradient; stage 2 reduce-scatters those it shards (only
    # the 5-element bias, under shard_min_size a shard, is all-reduced), so each rank holds 1/N
    # of them and the step's peak falls.
    for stage in (0, 1):
        assert (
            comm[stage].get("all_reduce(sum)", 0) >= grads
            and "reduce_scatter(sum)" not in comm[stage]
        ), comm[stage]
    assert comm[2]["reduce_scatter(sum)"] == grads - 4 * 5, comm[2]
    assert comm[2]["all_reduce(sum)"] == 4 * 5, comm[2]
    # Less than stage 1 holds, though the fused reduce-scatter's bucket (every sharded gradient,
    # concatenated) is alive for a moment.
    assert peak[2] < peak[1], peak
    # Stage 3: the parameters are split too, gathered where they are read.
    assert "all_gather" in comm[3] and "reduce_scatter(sum)" in comm[3], comm[3]


@pytest.mark.multiprocess
def test_master_weights_under_zero_2_train_like_one_process_with_float32_states_sharded():
    """master_weights_worker: a bfloat16 model's AdamW with master weights, ZeRO-2 on 2 ranks,
    against one process; each rank checks its master copies, their dtype and their shards."""
    r = launch(
        ["--nproc_per_node", "2", "--rdzv_timeout", "30"],
        [worker("master_weights_worker.py")],
        env=clean_env(),
        timeout=120,
    )
    assert r.returncode == 0, r
    reports = json_lines(r.stdout)
    assert sorted(rep["rank"] for rep in reports) == [0, 1], r
    for rep in reports:
        assert rep["problems"] == [], (rep["rank"], rep["problems"])
