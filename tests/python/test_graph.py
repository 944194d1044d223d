"""nn.Graph, first stage: inference graphs traced once per input signature and run by the C++
executor, equal to eager mode; clear errors for what tracing cannot do."""

import sys
from pathlib import Path

import numpy as np
import pytest

import oneflowlike as flow
import oneflowlike.nn as nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from char_gpt.model import GPT, GPTConfig  # noqa: E402


class Forward(nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, idx):
        logits, _ = self.model(idx)
        return logits


def gpt():
    flow.manual_seed(0)
    return GPT(GPTConfig(vocab_size=17, block_size=8, n_layer=2, n_head=2, n_embd=16))


def test_gpt_forward_graph_equals_eager_and_sees_parameter_updates():
    model = gpt().eval()
    graph = Forward(model)
    idx = flow.randint(0, 17, (2, 8))
    with flow.no_grad():
        want = model(idx)[0].numpy()
    np.testing.assert_array_equal(graph(idx).numpy(), want)
    assert graph.num_compiled == 1

    with flow.no_grad():  # parameters are bound by reference: the graph sees the update
        for p in model.parameters():
            p.mul_(0.5)
        want = model(idx)[0].numpy()
    np.testing.assert_array_equal(graph(idx).numpy(), want)
    assert graph.num_compiled == 1


def test_a_new_input_signature_traces_again_and_repr_prints_the_ir():
    graph = Forward(gpt().eval())
    assert "not compiled yet" in repr(graph)
    graph(flow.randint(0, 17, (2, 8)))
    graph(flow.randint(0, 17, (3, 5)))
    graph(flow.randint(0, 17, (2, 8)))
    assert graph.num_compiled == 2
    text = repr(graph)
    assert text.startswith("Forward(inputs: (2, 8) int64 cpu;")
    assert "= embedding(" in text and "= matmul(" in text and "= variable : (17, 16)" in text


def test_dropout_in_a_graph_draws_as_the_same_eager_calls():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)).train()

    class G(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x)

    x = flow.randn(8, 4)
    flow.manual_seed(3)
    with flow.no_grad():
        eager = [model(x).numpy() for _ in range(2)]
    graph = G()
    flow.manual_seed(3)
    got = [graph(x).numpy() for _ in range(2)]
    np.testing.assert_array_equal(got[0], eager[0])
    np.testing.assert_array_equal(got[1], eager[1])
    assert not np.array_equal(got[0], got[1])


class Reads(nn.Graph):
    def __init__(self, how):
        super().__init__()
        self.how = how

    def build(self, x):
        if self.how == "item":
            x.sum().item()
        elif self.how == "numpy":
            x.numpy()
        elif self.how == "if":
            if x.sum() > 0:
                return x
        return -x


@pytest.mark.parametrize("how,op", [("item", "item"), ("numpy", "numpy"), ("if", "bool")])
def test_data_inside_build_raises_naming_the_op(how, op):
    with pytest.raises(RuntimeError, match=rf"\[{op}\] data is not available while tracing"):
        Reads(how)(flow.randn(3))
    # A failed trace leaves nothing open: eager ops run as usual afterwards.
    assert not (flow.ones(2) + 1).is_traced


def test_wrong_inputs_raise_naming_the_signature():
    graph = Forward(gpt().eval())
    with pytest.raises(TypeError, match=r"Forward.build\(idx\) takes 1 inputs, got 2"):
        graph(flow.zeros(2, 8), flow.zeros(2, 8))
    with pytest.raises(TypeError, match=r"input 0 of Forward.build\(idx\) is a list"):
        graph([1, 2])
    with pytest.raises(NotImplementedError, match="training graphs"):
        graph.add_optimizer(None)


def test_traced_tensors_print_without_data():
    class Show(nn.Graph):
        def build(self, x):
            self.text = repr(x * 2)
            return x

    g = Show()
    g(flow.ones(2, 3))
    assert g.text == "tensor(<traced>, size=(2, 3), dtype=oneflowlike.float32, device='cpu')"


class WithDeadCode(nn.Graph):
    def build(self, x):
        unused = (x * 3).exp()  # noqa: F841 (dropped by the dead_code pass)
        return x.neg()


def test_dead_code_is_dropped_and_the_print_variable_shows_each_pass(capfd, monkeypatch):
    monkeypatch.setenv("OFL_GRAPH_PRINT", "1")
    g = WithDeadCode()
    np.testing.assert_array_equal(g(flow.ones(2)).numpy(), [-1.0, -1.0])
    err = capfd.readouterr().err
    traced, after = err.split("[graph] after dead_code:")
    assert "= exp(" in traced and "= exp(" not in after and "= neg(" in after
    assert "exp(" not in repr(g)
