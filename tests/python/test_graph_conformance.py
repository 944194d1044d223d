"""Graph-versus-eager guard: every registered op (each case of the SBP conformance checker) and
chains of views with contiguous() between them give inside an nn.Graph what they give eagerly:
the same values, or the same error at trace time. A traced tensor carries the strides eager mode
would give it, so contiguous() copies where eager copies and view() refuses where eager refuses."""

import numpy as np
import pytest
import sbp_conformance

import oneflowlike as flow

# Cases a graph runs differently by design, and why.
DIFFERENT_IN_GRAPHS = {
    "dropout": "the case reseeds the default generator inside the call; a graph replays the "
    "draws its trace reserved",
}


def _outputs(result):
    result = list(result) if isinstance(result, (tuple, list)) else [result]
    return [o for o in result if isinstance(o, flow.Tensor)]


class _Call(flow.nn.Graph):
    def __init__(self, fn, copy_first):
        super().__init__()
        self.fn, self.copy_first = fn, copy_first

    def build(self, *xs):
        args = [x.clone() if self.copy_first and i == 0 else x for i, x in enumerate(xs)]
        return tuple(_outputs(self.fn(*args)))


def _eager(fn, arrays, copy_first):
    args = [flow.tensor(a) for a in arrays]
    if copy_first:
        args[0] = args[0].clone()
    return [o.numpy() for o in _outputs(fn(*args))]


def _graph(fn, arrays, copy_first):
    outs = _Call(fn, copy_first)(*[flow.tensor(a) for a in arrays])
    return [o.numpy() for o in _outputs(outs)]


def _same(want, got):
    return len(want) == len(got) and all(
        w.shape == g.shape
        and w.dtype == g.dtype
        and np.allclose(w, g, rtol=1e-5, atol=1e-6, equal_nan=True)
        for w, g in zip(want, got)
    )


def test_every_op_gives_in_a_graph_what_it_gives_eagerly():
    differ, errors = {}, {}
    for name, (fn, arrays) in sbp_conformance.CASES.items():
        if name in DIFFERENT_IN_GRAPHS:
            continue
        copy_first = name.endswith("_")
        want = _eager(fn, arrays, copy_first)
        try:
            got = _graph(fn, arrays, copy_first)
        except Exception as e:  # noqa: BLE001 - collected and reported below
            errors[name] = f"{type(e).__name__}: {e}"
            continue
        if not _same(want, got):
            differ[name] = (want, got)
    assert not errors, errors
    assert not differ, differ


X = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)

# View chains users write, with contiguous() where eager mode needs it.
VIEW_CHAINS = {
    "attention merge heads": lambda x: x.transpose(1, 2).contiguous().view(2, 4, 15),
    "permute then view": lambda x: x.permute(0, 2, 3, 1).contiguous().view(-1, 3),
    "transpose twice then view": lambda x: x.transpose(0, 1).transpose(0, 1).view(6, 20),
    "strided slice": lambda x: x[:, :, ::2].contiguous().view(2, 3, 10),
    "narrow then view": lambda x: x.narrow(3, 1, 3).contiguous().view(24, 3),
    "expand then view": lambda x: x[:, :1].expand(2, 3, 4, 5).contiguous().view(6, 20),
    "split heads and back": lambda x: x.view(2, 3, 4, 5, 1)
    .transpose(1, 3)
    .contiguous()
    .view(2, 5 * 4, 3)
    .transpose(1, 2)
    .reshape(2, 60),
    "t of a matrix": lambda x: x.view(24, 5).t().contiguous().view(5, 4, 6),
    "unsqueeze of a transpose": lambda x: x.transpose(2, 3).unsqueeze(0).reshape(-1),
    "flatten of a permute": lambda x: x.permute(3, 2, 1, 0).flatten(1),
    "contiguous of contiguous": lambda x: x.contiguous().view(120).contiguous().view(2, 60),
}


@pytest.mark.parametrize("name", list(VIEW_CHAINS))
def test_view_chains_give_in_a_graph_what_they_give_eagerly(name):
    fn = VIEW_CHAINS[name]
    want = _eager(fn, [X], False)
    assert _same(want, _graph(fn, [X], False))


# Chains eager mode refuses: a graph refuses them too, when it traces, with the same error.
REFUSED = {
    "view of a transpose": lambda x: x.transpose(1, 2).view(2, 4, 15),
    "view of a permute": lambda x: x.permute(0, 2, 3, 1).view(-1, 3),
    "view of a strided slice": lambda x: x[:, :, ::2].view(2, 3, 10),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_views_eager_refuses_are_refused_in_a_graph_at_trace_time(name):
    fn = REFUSED[name]
    with pytest.raises(RuntimeError, match="cannot be viewed") as eager:
        _eager(fn, [X], False)
    with pytest.raises(RuntimeError, match="cannot be viewed") as graph:
        _graph(fn, [X], False)
    assert str(graph.value) == str(eager.value)


def test_is_contiguous_while_tracing_is_what_eager_says():
    seen = {}

    class G(flow.nn.Graph):
        def build(self, x):
            t = x.transpose(1, 2)
            seen["transpose"] = t.is_contiguous()
            seen["contiguous"] = t.contiguous().is_contiguous()
            return t.contiguous()

    G()(flow.tensor(X))
    t = flow.tensor(X).transpose(1, 2)
    assert seen == {"transpose": t.is_contiguous(), "contiguous": True}


def test_an_op_with_its_own_generator_draws_in_a_graph_as_eagerly_whatever_the_default_seed():
    """A graph draws afresh at each run only what the default generator drew: an op given a
    generator of its own keeps its values, also when that generator's seed is the default's (a
    data loader's flow.manual_seed(7) made uniform_(generator=Generator(7)) draw other values)."""
    flow.manual_seed(7)
    flow.rand(3)  # the default generator, seed 7, moves past offset 0

    class Own(flow.nn.Graph):
        def build(self, x):
            return x.clone().uniform_(-1.0, 2.0, generator=flow.Generator(7))

    x = flow.zeros(4, 4)
    want = x.clone().uniform_(-1.0, 2.0, generator=flow.Generator(7)).numpy()
    graph = Own()
    assert np.array_equal(graph(x).numpy(), want)
    assert np.array_equal(graph(x).numpy(), want)  # and at every run
