"""flow.utils.global_view (OneFlow's): global_mode makes creation ops global, a global tensor's
device leads creation ops to its placement, to_global / to_local over state dicts, and
load_state_dict resharding into global modules. One process, a placement of one rank; the
multi-process checks are in dist_workers/global_view_worker.py."""

import threading
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import oneflowlike as flow
import oneflowlike.nn as nn
import oneflowlike.nn.functional as F
from oneflowlike.utils import global_view

from _launch import expect_clean_ranks

B, S = flow.sbp.broadcast, flow.sbp.split
P1 = flow.placement("cpu", ranks=[0])

CREATIONS = {
    "zeros": lambda: flow.zeros(2, 3),
    "ones": lambda: flow.ones(2, 3),
    "empty": lambda: flow.empty(2, 3),
    "full": lambda: flow.full((2, 3), 7),
    "rand": lambda: flow.rand(2, 3),
    "randn": lambda: flow.randn(2, 3),
    "randint": lambda: flow.randint(0, 9, (2, 3)),
    "randperm": lambda: flow.randperm(5),
    "arange": lambda: flow.arange(1, 9, 2),
    "linspace": lambda: flow.linspace(0.0, 1.0, 5),
    "eye": lambda: flow.eye(3),
    "tensor": lambda: flow.tensor([[1.0, 2.0], [3.0, 4.0]]),
    "as_tensor": lambda: flow.as_tensor(np.arange(4)),
    "zeros_like": lambda: flow.zeros_like(flow.ones(2, 2)),
}


class Block(nn.Module):
    """A GPT-like block in the usual PyTorch style: nothing in it knows about placements."""

    def __init__(self, vocab=11, block=8, d=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(block, d)
        self.qkv = nn.Linear(d, 3 * d)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        _, T = idx.shape
        pos = flow.arange(0, T, dtype=flow.int64, device=idx.device)
        x = self.tok(idx) + self.pos(pos)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        att = q @ k.transpose(-2, -1) * (1.0 / q.shape[-1] ** 0.5)
        mask = flow.ones(T, T, device=idx.device).tril()
        att = F.softmax(att.masked_fill(mask == 0, float("-inf")), dim=-1)
        return self.head(x + att @ v)


class TestGlobalMode:
    def test_disabled_by_default(self):
        mode = global_view.current_global_mode()
        assert not mode.is_enabled and mode.placement is None and mode.sbp is None
        assert not flow.zeros(2).is_global

    def test_mode_is_reported_and_restored(self):
        with global_view.global_mode(True, placement=P1, sbp=S(0)):
            mode = global_view.current_global_mode()
            assert mode.is_enabled and mode.placement == P1 and mode.sbp == (S(0),)
            with global_view.global_mode(False):
                assert not global_view.current_global_mode().is_enabled
                assert not flow.ones(2).is_global
            assert global_view.current_global_mode().sbp[0] == S(0)
        assert not global_view.current_global_mode().is_enabled

    def test_sbp_defaults_to_broadcast_per_mesh_axis(self):
        mesh = flow.placement("cpu", ranks=[[0]])
        with global_view.global_mode(True, placement=mesh):
            assert global_view.current_global_mode().sbp == (B, B)
            assert flow.zeros(3).sbp == (B, B)

    @pytest.mark.parametrize("name", sorted(CREATIONS))
    def test_creation_ops_are_global_with_one_device_values(self, name):
        flow.manual_seed(5)
        want = CREATIONS[name]()
        flow.manual_seed(5)
        with global_view.global_mode(True, placement=P1):
            got = CREATIONS[name]()
        assert got.is_global and got.placement == P1 and got.sbp == (B,)
        assert tuple(got.shape) == tuple(want.shape) and got.dtype == want.dtype
        if name not in ("empty",):
            np.testing.assert_array_equal(got.numpy(), want.numpy())

    def test_mode_sbp_and_requires_grad(self):
        with global_view.global_mode(True, placement=P1, sbp=S(0)):
            w = flow.randn(4, 3, requires_grad=True)
        assert w.sbp == (S(0),) and w.requires_grad and w.is_leaf
        w.sum().backward()
        np.testing.assert_array_equal(w.grad.numpy(), np.ones((4, 3), np.float32))

    def test_like_ops_of_local_tensors_follow_the_mode(self):
        local = flow.ones(2, 3)
        with global_view.global_mode(True, placement=P1):
            for fn in (flow.zeros_like, flow.ones_like, flow.empty_like, flow.rand_like):
                out = fn(local)
                assert out.is_global and out.sbp == (B,) and tuple(out.shape) == (2, 3), fn
            assert flow.full_like(local, 4.0).numpy().tolist() == [[4.0] * 3] * 2

    def test_modules_built_inside_are_global_with_one_device_values(self):
        flow.manual_seed(0)
        ref = nn.Linear(4, 6)
        flow.manual_seed(0)
        with global_view.global_mode(True, placement=P1):
            m = nn.Linear(4, 6)
            out = m(flow.ones(3, 4))
        assert isinstance(m.weight, nn.Parameter) and m.weight.is_global and out.is_global
        np.testing.assert_array_equal(m.weight.numpy(), ref.weight.numpy())
        np.testing.assert_allclose(out.numpy(), ref(flow.ones(3, 4)).detach().numpy(), rtol=1e-6)

    def test_meta_device_gives_meta_global(self):
        big = flow.placement("cpu", ranks=list(range(8)))  # simulated: larger than the world
        with global_view.global_mode(True, placement=big, sbp=S(0)):
            t = flow.zeros(16, 4, device="meta")
        assert t.is_global and t.device.type == "meta" and t.local_shapes()[7] == (2, 4)

    def test_thread_local(self):
        seen = []
        with global_view.global_mode(True, placement=P1):
            t = threading.Thread(target=lambda: seen.append(flow.zeros(1).is_global))
            t.start()
            t.join()
        assert seen == [False]

    def test_device_picks_the_placement_type(self):
        with global_view.global_mode(True, placement=P1):
            t = flow.zeros(2, device="cpu")
        assert t.is_global and t.placement == P1


class TestGlobalDevice:
    def test_device_prints_as_before_and_carries_the_placement(self):
        x = flow.zeros(2, 3, placement=P1, sbp=S(0))
        d = x.device
        assert str(d) == "cpu" and d.type == "cpu" and repr(d) == repr(flow.device("cpu"))
        assert d == flow.device("cpu") and d.placement == P1
        assert not hasattr(flow.zeros(1).device, "placement")

    def test_creation_given_a_global_device_is_broadcast_global(self):
        x = flow.zeros(2, 3, placement=P1, sbp=S(0))
        for t in (
            flow.arange(3, device=x.device),
            flow.ones(3, device=x.device),
            flow.tensor([1.0, 2.0, 3.0], device=x.device),
            x.new_zeros(3),
            x.new_tensor([1.0, 2.0, 3.0]),
        ):
            assert t.is_global and t.placement == P1 and t.sbp == (B,)
        out = flow.arange(3, device=x.device) + x  # no longer "mixes a local tensor"
        np.testing.assert_array_equal(out.numpy(), np.tile(np.arange(3.0), (2, 1)))

    def test_block_on_global_input_matches_local(self):
        idx = np.random.default_rng(0).integers(0, 11, (2, 8))
        flow.manual_seed(0)
        model = Block()
        want = model(flow.tensor(idx))
        model.to_global(P1, B)
        got = model(flow.tensor(idx, placement=P1, sbp=S(0)))
        assert got.is_global
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
        with global_view.global_mode(True, placement=P1):
            again = model(flow.tensor(idx))
        np.testing.assert_allclose(again.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


class TestHostile:
    def test_enabled_without_placement(self):
        with pytest.raises(ValueError, match=r"\[global_mode\] needs placement="):
            global_view.global_mode(True)

    def test_placement_not_a_placement(self):
        with pytest.raises(TypeError, match=r"\[global_mode\] placement must be"):
            global_view.global_mode(True, placement="cpu")

    @pytest.mark.parametrize("sbp", ["B", 0, [], (B, "S(0)")])
    def test_sbp_not_sbp_values(self, sbp):
        with pytest.raises(TypeError, match=r"\[global_mode\] sbp must be flow.sbp values"):
            global_view.global_mode(True, placement=P1, sbp=sbp)

    def test_sbp_count_differs_from_the_mesh(self):
        with pytest.raises(ValueError, match=r"\[global_mode\] sbp \(B, B\) has 2 entries"):
            global_view.global_mode(True, placement=P1, sbp=(B, B))

    def test_split_axis_out_of_range_names_the_op(self):
        with global_view.global_mode(True, placement=P1, sbp=S(1)):
            with pytest.raises(RuntimeError, match=r"\[arange\] cannot make a global tensor of "
                               r"shape \(4,\) on cpu\[0\] with sbp S\(1\)"):  # fmt: skip
                flow.arange(4)
            assert flow.zeros(2, 2).sbp == (S(1),)  # the mode still works for 2-d tensors

    def test_placement_outside_the_world_names_the_op(self):
        with global_view.global_mode(True, placement=flow.placement("cpu", ranks=[0, 1])):
            with pytest.raises(RuntimeError, match=r"\[randn\].*not in the world"):
                flow.randn(3)
        assert not global_view.current_global_mode().is_enabled  # the error left the mode


class TestToGlobalToLocal:
    def test_state_dict_round_trip(self):
        sd = nn.Sequential(nn.Linear(4, 2), nn.ReLU(), nn.Linear(2, 2)).state_dict()
        g = global_view.to_global(sd, placement=P1, sbp=B)
        assert isinstance(g, OrderedDict) and list(g) == list(sd)
        assert all(v.is_global and v.sbp == (B,) for v in g.values())
        back = global_view.to_local(g)
        for k in sd:
            assert not back[k].is_global
            np.testing.assert_array_equal(back[k].numpy(), sd[k].numpy())

    def test_sbp_function_and_nesting(self):
        data = {"a": [flow.zeros(2, 2), (flow.ones(3), None)], "b": flow.ones(1, 4)}
        pick = lambda tree, t: S(1) if t is data["b"] else B  # noqa: E731
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # tensors and None leaves are not warned about
            g = global_view.to_global(data, placement=P1, sbp=pick)
        assert g["b"].sbp == (S(1),) and g["a"][0].sbp == (B,) and g["a"][1][1] is None
        assert isinstance(g["a"][1], tuple) and g["a"][1][0].is_global

    def test_non_tensor_leaves_warn_and_stay(self):
        with pytest.warns(UserWarning, match="Non-Tensor type: int"):
            out = global_view.to_global({"step": 3}, placement=P1, sbp=B)
        assert out == {"step": 3}
        assert global_view.to_global([3], P1, B, warn_on_non_tensor_leaf=False) == [3]

    def test_global_tensor_reshards_and_local_needs_both(self):
        x = flow.zeros(4, placement=P1, sbp=B)
        assert global_view.to_global(x, sbp=S(0)).sbp == (S(0),)
        with pytest.raises(ValueError, match=r"\[to_global\] a local tensor of shape \(4,\)"):
            global_view.to_global(flow.zeros(4), placement=P1)
        with pytest.warns(UserWarning, match="should be global"):
            assert not global_view.to_local(flow.zeros(1)).is_global

    def test_exposed_as_flow_utils_global_view(self):
        assert flow.utils.global_view is global_view
        assert set(global_view.__all__) == {
            "global_mode", "current_global_mode", "to_global", "to_local"
        }  # fmt: skip


class TestLoadStateDictReshards:
    def _sd(self):
        flow.manual_seed(1)
        return {k: v.detach().clone() for k, v in nn.Linear(4, 6).state_dict().items()}

    def test_local_full_tensors_into_a_global_module(self):
        sd = self._sd()
        m = nn.Linear(4, 6).to_global(P1, S(0))
        m.load_state_dict(sd)
        assert m.weight.sbp == (S(0),) and m.weight.placement == P1
        np.testing.assert_array_equal(m.weight.numpy(), sd["weight"].numpy())

    def test_global_with_another_placement_and_sbp(self):
        sd = self._sd()
        mesh = flow.placement("cpu", ranks=[[0]])
        g = {k: v.to_global(placement=mesh, sbp=(S(0), B)) for k, v in sd.items()}
        m = nn.Linear(4, 6).to_global(P1, S(1))
        m.load_state_dict(g)
        assert m.weight.sbp == (S(1),) and m.weight.placement == P1
        np.testing.assert_array_equal(m.weight.numpy(), sd["weight"].numpy())

    def test_global_into_a_local_module(self):
        sd = self._sd()
        m = nn.Linear(4, 6)
        m.load_state_dict({k: v.to_global(placement=P1, sbp=S(0)) for k, v in sd.items()})
        assert not m.weight.is_global
        np.testing.assert_array_equal(m.bias.numpy(), sd["bias"].numpy())

    def test_assign_keeps_the_module_layout(self):
        sd = self._sd()
        m = nn.Linear(4, 6).to_global(P1, S(0))
        m.load_state_dict(sd, assign=True)
        assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
        assert m.weight.sbp == (S(0),)
        np.testing.assert_array_equal(m.weight.numpy(), sd["weight"].numpy())

    def test_shape_mismatch_names_key_and_shapes(self):
        m = nn.Linear(4, 6).to_global(P1, S(0))
        bad = {"weight": flow.zeros(6, 5), "bias": flow.zeros(6)}
        with pytest.raises(RuntimeError, match=r"size mismatch for weight: .*\(6, 5\).*\(6, 4\)"):
            m.load_state_dict(bad)
        bad = {"weight": flow.zeros(6, 5, placement=P1, sbp=B), "bias": flow.zeros(6)}
        with pytest.raises(RuntimeError, match=r"size mismatch for weight"):
            m.load_state_dict(bad)

    def test_buffers_reshard_too(self):
        bn = nn.BatchNorm1d(4)
        bn.running_mean.fill_(2.0)
        g = nn.BatchNorm1d(4).to_global(P1, S(0))
        g.load_state_dict(bn.state_dict())
        assert g.running_mean.is_global and g.running_mean.sbp == (S(0),)
        np.testing.assert_array_equal(g.running_mean.numpy(), np.full(4, 2.0, np.float32))


@pytest.mark.multiprocess
def test_global_view_on_two_ranks():
    expect_clean_ranks("global_view_worker.py", 2)


class TestInsideAGraph:
    """Fresh tensors made in build() from a global input's device, or turned global there: a
    constant every rank computes alike, boxed to broadcast (or further, to a split)."""

    def _embedder(self):
        flow.manual_seed(0)
        emb = nn.Embedding(10, 4)
        emb.to_global(P1, flow.sbp.broadcast)
        return emb

    def test_arange_on_a_global_input_s_device_runs_as_eagerly(self):
        emb = self._embedder()

        def positions_plus_tokens(idx):
            pos = flow.arange(0, idx.shape[1], device=idx.device)
            return emb(pos) + emb(idx)

        class Step(flow.nn.Graph):
            def __init__(self):
                super().__init__()
                self.emb = emb

            def build(self, idx):
                return positions_plus_tokens(idx)

        idx = flow.tensor([[1, 2, 3], [4, 5, 6]]).to_global(P1, flow.sbp.split(0))
        got = Step()(idx)
        assert got.is_global and tuple(got.shape) == (2, 3, 4)
        np.testing.assert_allclose(got.numpy(), positions_plus_tokens(idx).numpy(), rtol=1e-6)

    def test_to_global_of_a_fresh_tensor_in_build_is_broadcast_or_a_clear_error(self):
        class Step(flow.nn.Graph):
            def __init__(self, sbp):
                super().__init__()
                self.sbp = sbp

            def build(self, x):
                return x + flow.ones(2, 3).to_global(P1, self.sbp)

        x = flow.zeros(2, 3).to_global(P1, flow.sbp.broadcast)
        np.testing.assert_allclose(Step(flow.sbp.broadcast)(x).numpy(), np.ones((2, 3)))
        with pytest.raises(RuntimeError, match=r"\[to_global\].*\(2, 3\) can only become broad"):
            Step(flow.sbp.split(0))(x)
