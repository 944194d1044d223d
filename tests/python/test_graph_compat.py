"""nn.Graph as OneFlow's users write it (issue 29): state_dict / load_state_dict to resume graph
training, flow.save(graph, dir) to export, config.enable_amp, enable_auto_parallel on one
device, OneFlow's performance hints accepted with one warning, and graph.debug."""

import warnings

import numpy as np
import pytest

import oneflowlike as flow


class Step(flow.nn.Graph):
    def __init__(self, model, opt, sch=None):
        super().__init__()
        self.model = model
        self.add_optimizer(opt, lr_sch=sch)

    def build(self, x, y):
        loss = ((self.model(x) - y) ** 2).mean()
        loss.backward()
        return loss


def setup(seed=0):
    flow.manual_seed(seed)
    model = flow.nn.Sequential(flow.nn.Linear(4, 8), flow.nn.GELU(), flow.nn.Linear(8, 1))
    opt = flow.optim.AdamW(model.parameters(), lr=0.05)
    sch = flow.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    return model, opt, sch


def batches(n):
    rng = np.random.default_rng(1)
    return [(flow.tensor(rng.standard_normal((8, 4)).astype(np.float32)),
             flow.tensor(rng.standard_normal((8, 1)).astype(np.float32))) for _ in range(n)]  # fmt: skip


def test_state_dict_resumes_graph_training_exactly(tmp_path):
    data = batches(6)
    straight = Step(*setup())
    want = [straight(x, y).item() for x, y in data]

    first = Step(*setup())
    got = [first(x, y).item() for x, y in data[:3]]
    sd = first.state_dict()
    assert {"model", "_optimizer0", "_lr_scheduler0", "System-Train-TrainStep"} == set(sd)
    # OneFlow's pipeline checkpoint tutorial reads the step count by this name.
    step = sd["System-Train-TrainStep"]
    assert step.dtype == flow.int64 and int(step) == 3
    flow.save(sd, tmp_path / "ckpt")

    resumed = Step(*setup(seed=7))  # other weights until loaded
    resumed.load_state_dict(flow.load(tmp_path / "ckpt"))
    assert int(resumed.state_dict()["System-Train-TrainStep"]) == 3
    got += [resumed(x, y).item() for x, y in data[3:]]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert int(resumed.state_dict()["System-Train-TrainStep"]) == 6
    # A state dict saved before the count existed still loads, strictly, from step 0.
    older = Step(*setup())
    older.load_state_dict({k: v for k, v in sd.items() if k != "System-Train-TrainStep"})
    assert int(older.state_dict()["System-Train-TrainStep"]) == 0


def test_load_state_dict_refuses_after_the_first_call_and_wrong_keys():
    g = Step(*setup())
    sd = g.state_dict()
    with pytest.raises(KeyError, match=r"missing \['_optimizer0'\], unexpected \['extra'\]"):
        g.load_state_dict(
            {"model": sd["model"], "_lr_scheduler0": sd["_lr_scheduler0"], "extra": 1}
        )
    g.load_state_dict({"model": sd["model"]}, strict=False)
    x, y = batches(1)[0]
    g(x, y)
    with pytest.raises(RuntimeError, match=r"load_state_dict after its first call"):
        g.load_state_dict(sd)


def test_flow_save_exports_a_graph_as_graph_save(tmp_path):
    model = flow.nn.Linear(4, 2).eval()

    class Infer(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x)

    g = Infer()
    g(flow.randn(3, 4))
    flow.save(g, tmp_path / "exported")
    assert (tmp_path / "exported" / "graph.json").exists()


def test_enable_amp_traces_under_autocast_and_set_grad_scaler_checks_its_argument():
    model, opt, _ = setup()

    class AmpStep(Step):
        def build(self, x, y):
            out = self.model(x)
            loss = ((out.float() - y) ** 2).mean()
            loss.backward()
            return out, loss

    g = AmpStep(model, opt)
    g.config.enable_amp(True)
    x, y = batches(1)[0]
    out, loss = g(x, y)
    assert out.dtype == flow.bfloat16  # the CPU's autocast dtype
    assert np.isfinite(loss.item())
    g.config.set_grad_scaler(None)  # none: no loss scaling (test_graph_grad_scaler.py scales)
    with pytest.raises(TypeError, match="set_grad_scaler expects a flow.amp.GradScaler"):
        g.set_grad_scaler(1.0)


def test_auto_parallel_on_one_device_runs_as_is_and_hints_warn_once():
    g = Step(*setup())
    with pytest.raises(ValueError, match=r"chunks must be counts of at least 1, got \(0,\)"):
        g.config.enable_auto_parallel(True, pipeline=True, chunks=(0,))
    g.config.enable_auto_parallel(True)
    x, y = batches(1)[0]
    with pytest.warns(UserWarning, match=r"enable_auto_parallel on local inputs"):
        assert np.isfinite(g(x, y).item())
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        g.config.allow_fuse_cast_scale(True)
        g.config.allow_fuse_cast_scale(True)
        g.config.enable_straighten_algorithm("MemoryFirst")
    hints = [str(w.message) for w in seen]
    assert sum("allow_fuse_cast_scale" in h for h in hints) <= 1
    assert any("enable_straighten_algorithm is a performance hint" in h for h in hints) or not hints


def test_debug_prints_each_compilation(capsys):
    g = Step(*setup())
    g.debug(1)
    x, y = batches(1)[0]
    g(x, y)
    out = capsys.readouterr().out
    assert "[graph] Step compiled (inputs:" in out and "nodes" in out
    g.debug(-1)
    g(flow.randn(5, 4), flow.randn(5, 1))
    assert capsys.readouterr().out == ""
