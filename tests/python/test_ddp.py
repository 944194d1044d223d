"""flow.nn.parallel.DistributedDataParallel: on real ranks through the launcher against one
process training on the whole batch (dist_workers/ddp_worker.py), and its single-process and
refusing cases here."""

import subprocess
import sys

import numpy as np
import pytest

import oneflowlike as flow
import oneflowlike.distributed as dist
from _launch import clean_env, expect_clean_ranks, json_lines, launch, logs_by_rank, worker
from oneflowlike.distributed.launch import free_port
from oneflowlike.nn.parallel import DistributedDataParallel as DDP

needs_comm = pytest.mark.skipif(
    not hasattr(flow._C, "comm"), reason="this build has no oneflowlike._C.comm"
)


@needs_comm
@pytest.mark.multiprocess
@pytest.mark.parametrize("nproc", [2, 3])
def test_ddp_broadcasts_rank0_and_trains_like_one_process_on_the_whole_batch(nproc):
    reports = expect_clean_ranks("ddp_worker.py", nproc)
    for rep in reports:
        # bucket_size=2 over 4 parameters: two buckets, the first out while backward still ran
        assert rep["last_sync"]["buckets"] == 2
        assert rep["last_sync"]["launched_during_backward"] >= 1


@needs_comm
@pytest.mark.multiprocess
def test_ranks_spawned_by_multiprocessing_join_with_init_process_group_rank_and_world_size():
    r = subprocess.run(
        [sys.executable, worker("ddp_spawn_worker.py"), str(free_port())],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[(0, True), (1, True)]" in r.stdout


@needs_comm
@pytest.mark.multiprocess
def test_a_peer_that_stalls_makes_backward_raise_naming_it(tmp_path):
    r = launch(
        ["--nproc_per_node", "2", "--log_dir", str(tmp_path), "--rdzv_timeout", "3"],
        [worker("ddp_hostile_worker.py"), "stall"],
        timeout=60,
    )
    assert r.returncode == 1 and r.seconds < 30, r
    (rep,) = json_lines(logs_by_rank(tmp_path)[0])
    assert "all_reduce" in rep["error"] and "did not arrive: [1]" in rep["error"], rep
    assert rep["seconds"] < 10, rep


@needs_comm
@pytest.mark.multiprocess
def test_ranks_wrapping_different_models_are_refused_naming_what_each_has(tmp_path):
    r = launch(
        ["--nproc_per_node", "2", "--log_dir", str(tmp_path), "--rdzv_timeout", "10"],
        [worker("ddp_hostile_worker.py"), "mismatch"],
        timeout=60,
    )
    assert r.returncode == 1, r
    (rep,) = json_lines(logs_by_rank(tmp_path)[0])
    assert rep["error"].startswith("ValueError: [DistributedDataParallel] the ranks wrap"), rep
    want = "rank 0: 2 parameters of 10 elements in 1 bucket, rank 1: 2 parameters of 15"
    assert want in rep["error"], rep


def test_init_process_group_refuses_what_it_cannot_do():
    with pytest.raises(ValueError, match=r"init_method 'tcp://1.2.3.4:5' is not supported"):
        dist.init_process_group("gloo", init_method="tcp://1.2.3.4:5")
    with pytest.raises(ValueError, match=r"\[init_process_group\] store="):
        dist.init_process_group("gloo", store=object())
    assert dist.is_available() and dist.get_backend() == "gloo"


def test_in_one_process_ddp_is_the_module():
    flow.manual_seed(0)
    model = flow.nn.Linear(3, 2)
    ddp = DDP(model)
    x = flow.ones(4, 3)
    np.testing.assert_allclose(ddp(x).numpy(), model(x).numpy())
    ddp(x).sum().backward()
    np.testing.assert_allclose(model.bias.grad.numpy(), [4.0, 4.0])
    assert list(ddp.state_dict()) == ["module.weight", "module.bias"]
    with ddp.no_sync():
        assert not ddp.require_backward_grad_sync
    assert ddp.require_backward_grad_sync


def test_the_wrapped_models_attributes_read_through_ddp_as_in_oneflow():
    """OneFlow's DistributedDataParallel returns the model itself, hooked, so its programs read
    the model's attributes through it; ours is PyTorch's wrapper, forwarding what it lacks."""

    class Net(flow.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = flow.nn.Linear(3, 2)
            self.lr = 0.1

        def scale(self):
            return 2 * self.lr

    ddp = DDP(Net())
    assert ddp.lr == 0.1 and ddp.scale() == 0.2 and ddp.fc is ddp.module.fc
    assert ddp.broadcast_buffers is True  # the wrapper's own come first
    with pytest.raises(AttributeError, match=r"'DistributedDataParallel' object \(nor the module "):
        ddp.missing


def test_ddp_refuses_what_it_cannot_wrap():
    with pytest.raises(TypeError, match=r"\[DistributedDataParallel\] wraps an nn.Module"):
        DDP(lambda x: x)
    model = flow.nn.Linear(3, 2)
    model.to_global(flow.placement("cpu", ranks=[0]), flow.sbp.broadcast)
    with pytest.raises(TypeError, match="weight is global"):
        DDP(model)


def test_ddp_inside_a_graph_says_how_to_do_data_parallelism_there():
    ddp = DDP(flow.nn.Linear(3, 2))

    class Step(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.ddp = ddp

        def build(self, x):
            return self.ddp(x)

    with pytest.raises(TypeError, match="runs eagerly.*global"):
        Step()(flow.ones(2, 3))


def test_async_all_reduce_in_one_process_waits_and_returns_the_tensor():
    t = flow.tensor([1.0, 2.0])
    work = dist.all_reduce(t, async_op=True)
    assert work.wait() and work.is_completed()
    np.testing.assert_allclose(work.result()[0].numpy(), [1.0, 2.0])
    strided = flow.arange(6.0).reshape(2, 3).t()  # not contiguous: reduced through a copy
    dist.broadcast(strided, async_op=True).wait()
    np.testing.assert_allclose(strided.numpy(), np.arange(6.0).reshape(2, 3).T)
