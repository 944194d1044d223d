"""Learning-rate schedules against their closed forms."""

import math

import pytest

import oneflowlike as flow
from oneflowlike import nn, optim
from oneflowlike.optim import lr_scheduler as sched

BASE = 0.1


def make_optimizer(lr=BASE, groups=1):
    params = [{"params": [nn.Parameter(flow.ones(1))], "lr": lr * (i + 1)} for i in range(groups)]
    return optim.SGD(params, lr=lr, momentum=0.9)


def trajectory(scheduler, steps=20):
    """The lr of group 0 at epochs 0..steps-1 (the scheduler sets epoch 0 on construction)."""
    lrs = []
    for _ in range(steps):
        lrs.append(scheduler.optimizer.param_groups[0]["lr"])
        assert scheduler.get_last_lr()[0] == lrs[-1]
        scheduler.optimizer.step()
        scheduler.step()
    return lrs


def assert_close_lists(actual, expected):
    assert actual == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_step_lr_decays_every_step_size_epochs():
    lrs = trajectory(sched.StepLR(make_optimizer(), step_size=3, gamma=0.5))
    assert_close_lists(lrs, [BASE * 0.5 ** (e // 3) for e in range(20)])


def test_multi_step_lr_decays_at_each_milestone():
    lrs = trajectory(sched.MultiStepLR(make_optimizer(), milestones=[8, 3, 12], gamma=0.1))
    expected = [BASE * 0.1 ** sum(e >= m for m in (3, 8, 12)) for e in range(20)]
    assert_close_lists(lrs, expected)


def test_exponential_lr_multiplies_by_gamma_each_epoch():
    lrs = trajectory(sched.ExponentialLR(make_optimizer(), gamma=0.9))
    assert_close_lists(lrs, [BASE * 0.9**e for e in range(20)])


def test_cosine_annealing_follows_the_half_cosine():
    lrs = trajectory(sched.CosineAnnealingLR(make_optimizer(), T_max=10, eta_min=0.01))
    expected = [0.01 + (BASE - 0.01) * (1 + math.cos(math.pi * e / 10)) / 2 for e in range(20)]
    assert_close_lists(lrs, expected)
    assert lrs[10] == pytest.approx(0.01)


def test_linear_lr_ramps_then_holds():
    lrs = trajectory(sched.LinearLR(make_optimizer(), start_factor=0.25, total_iters=4))
    expected = [BASE * (0.25 + 0.75 * min(e, 4) / 4) for e in range(20)]
    assert_close_lists(lrs, expected)


def test_constant_lr_scales_until_total_iters():
    lrs = trajectory(sched.ConstantLR(make_optimizer(), factor=0.5, total_iters=3), 6)
    assert_close_lists(lrs, [0.05, 0.05, 0.05, 0.1, 0.1, 0.1])


def test_lambda_lr_supports_one_function_per_group():
    opt = make_optimizer(groups=2)
    scheduler = sched.LambdaLR(opt, [lambda e: 1.0 / (e + 1), lambda e: 0.5**e])
    for epoch in range(5):
        assert opt.param_groups[0]["lr"] == pytest.approx(BASE / (epoch + 1))
        assert opt.param_groups[1]["lr"] == pytest.approx(2 * BASE * 0.5**epoch)
        scheduler.step()


def test_sequential_lr_warmup_then_cosine():
    opt = make_optimizer()
    warmup = sched.LinearLR(opt, start_factor=0.1, total_iters=5)
    cosine = sched.CosineAnnealingLR(opt, T_max=10)
    lrs = trajectory(sched.SequentialLR(opt, [warmup, cosine], milestones=[5]), 15)
    expected = [BASE * (0.1 + 0.9 * e / 5) for e in range(5)]
    expected += [BASE * (1 + math.cos(math.pi * e / 10)) / 2 for e in range(10)]
    assert_close_lists(lrs, expected)


def test_sequential_lr_rejects_wrong_milestone_count():
    opt = make_optimizer()
    with pytest.raises(ValueError, match="milestone"):
        sched.SequentialLR(opt, [sched.StepLR(opt, 2), sched.StepLR(opt, 3)], milestones=[])


def test_warmup_cosine_lr_warms_up_linearly_then_decays_to_min_lr():
    lrs = trajectory(sched.WarmupCosineLR(make_optimizer(), 4, 14, min_lr=0.001), 20)
    expected = []
    for e in range(20):
        if e < 4:
            expected.append(BASE * e / 4)
        else:
            progress = min(1.0, (e - 4) / 10)
            expected.append(0.001 + (BASE - 0.001) * (1 + math.cos(math.pi * progress)) / 2)
    assert_close_lists(lrs, expected)
    assert lrs[-1] == pytest.approx(0.001)


def test_get_cosine_schedule_with_warmup_is_warmup_cosine_to_zero():
    scheduler = sched.get_cosine_schedule_with_warmup(make_optimizer(), 2, 10)
    lrs = trajectory(scheduler, 11)
    assert lrs[:3] == pytest.approx([0.0, 0.05, 0.1]) and lrs[-1] == pytest.approx(0.0)


def test_initial_lr_is_recorded_and_required_for_resuming():
    opt = make_optimizer()
    sched.StepLR(opt, 2)
    assert opt.param_groups[0]["initial_lr"] == BASE
    with pytest.raises(KeyError, match="initial_lr"):
        sched.StepLR(make_optimizer(), 2, last_epoch=5)


def test_state_dict_round_trip_resumes_the_schedule():
    opt = make_optimizer()
    scheduler = sched.CosineAnnealingLR(opt, T_max=10)
    for _ in range(4):
        scheduler.step()
    state = scheduler.state_dict()
    assert "optimizer" not in state and state["last_epoch"] == 4

    opt2 = make_optimizer()
    resumed = sched.CosineAnnealingLR(opt2, T_max=10)
    resumed.load_state_dict(state)
    scheduler.step()
    resumed.step()
    assert resumed.get_last_lr() == pytest.approx(scheduler.get_last_lr())
    assert opt2.param_groups[0]["lr"] == pytest.approx(opt.param_groups[0]["lr"])


def test_sequential_lr_state_dict_includes_child_schedulers():
    opt = make_optimizer()
    children = [sched.LinearLR(opt, 0.5, total_iters=2), sched.ExponentialLR(opt, 0.5)]
    scheduler = sched.SequentialLR(opt, children, milestones=[2])
    for _ in range(3):
        scheduler.step()
    state = scheduler.state_dict()
    assert len(state["_schedulers"]) == 2

    opt2 = make_optimizer()
    children2 = [sched.LinearLR(opt2, 0.5, total_iters=2), sched.ExponentialLR(opt2, 0.5)]
    resumed = sched.SequentialLR(opt2, children2, milestones=[2])
    resumed.load_state_dict(state)
    scheduler.step()
    resumed.step()
    assert opt2.param_groups[0]["lr"] == pytest.approx(opt.param_groups[0]["lr"])
    assert opt.param_groups[0]["lr"] == pytest.approx(BASE * 0.5**2)


def test_lambda_lr_state_dict_skips_plain_functions():
    scheduler = sched.LambdaLR(make_optimizer(), lambda e: 0.5)
    assert scheduler.state_dict()["lr_lambdas"] == [None]
