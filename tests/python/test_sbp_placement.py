"""flow.sbp and flow.placement: OneFlow's spellings, value semantics, errors and shard shapes."""

import pickle

import pytest

import oneflowlike as flow

# ---- sbp ---------------------------------------------------------------------------------


def test_sbp_factories_and_repr_follow_oneflow():
    assert repr(flow.sbp.split(0)) == "oneflowlike.sbp.split(axis=0)"
    assert str(flow.sbp.split(2)) == "oneflowlike.sbp.split(axis=2)"
    assert repr(flow.sbp.broadcast) == "oneflowlike.sbp.broadcast"
    assert repr(flow.sbp.partial_sum) == "oneflowlike.sbp.partial_sum"
    assert repr(flow.sbp.partial_max) == "oneflowlike.sbp.partial_max"
    assert repr(flow.sbp.partial_min) == "oneflowlike.sbp.partial_min"
    assert flow.sbp.split(dim=1) == flow.sbp.split(1)
    assert isinstance(flow.sbp.broadcast, flow.sbp.sbp)


def test_sbp_kind_axis_op_and_canonical_text():
    s = flow.sbp.split(1)
    assert (s.kind, s.axis, s.to_string()) == ("split", 1, "S(1)")
    assert flow.sbp.broadcast.kind == "broadcast"
    assert flow.sbp.broadcast.to_string() == "B"
    assert (flow.sbp.partial_max.kind, flow.sbp.partial_max.op) == ("partial", "max")
    assert flow.sbp.partial_sum.to_string() == "P(sum)"
    with pytest.raises(RuntimeError, match=r"\[sbp\] B has no split axis"):
        flow.sbp.broadcast.axis
    with pytest.raises(RuntimeError, match=r"\[sbp\] S\(1\) has no partial op"):
        s.op


@pytest.mark.parametrize(
    "text,expected",
    [
        ("S(0)", "S(0)"),
        (" S ( 3 ) ", "S(3)"),
        ("B", "B"),
        ("P", "P(sum)"),
        ("P(sum)", "P(sum)"),
        ("P(max)", "P(max)"),
        ("P(min)", "P(min)"),
    ],
)
def test_sbp_parse_round_trips(text, expected):
    s = flow._C.Sbp.parse(text)
    assert s.to_string() == expected
    assert flow._C.Sbp.parse(s.to_string()) == s
    assert flow.sbp.parse(text) == s


@pytest.mark.parametrize("text", ["S(-1)", "Q", "", "P(avg)", "S(0) B"])
def test_sbp_parse_errors_name_the_text(text):
    with pytest.raises(flow._C.Error) as e:
        flow._C.Sbp.parse(text)
    assert str(e.value) == (
        f"[sbp] cannot parse '{text}' (expected S(i), B, P(sum), P(max) or P(min))"
    )


def test_sbp_equality_hash_and_pickle():
    values = [
        flow.sbp.split(0),
        flow.sbp.split(1),
        flow.sbp.broadcast,
        flow.sbp.partial_sum,
        flow.sbp.partial_max,
        flow.sbp.partial_min,
    ]
    again = [flow.sbp.split(0), flow.sbp.split(1), flow.sbp.parse("B"), flow.sbp.parse("P")]
    assert len(set(values + again)) == 6
    assert flow.sbp.split(0) != flow.sbp.split(1)
    assert flow.sbp.split(0) != "S(0)"
    assert {flow.sbp.split(0): 1}[flow.sbp.split(0)] == 1
    for v in values:
        assert pickle.loads(pickle.dumps(v)) == v
    with pytest.raises(RuntimeError, match=r"\[sbp\] unknown partial op 'avg'"):
        flow._C.Sbp.partial("avg")


def test_nd_sbp_from_sequences_and_text():
    nd = flow.sbp.nd_sbp([flow.sbp.split(0), flow.sbp.broadcast])
    assert nd.to_string() == "(S(0), B)"
    assert repr(nd) == "(oneflowlike.sbp.split(axis=0), oneflowlike.sbp.broadcast)"
    assert len(nd) == 2 and nd[0] == flow.sbp.split(0) and nd[-1] == flow.sbp.broadcast
    assert list(nd) == [flow.sbp.split(0), flow.sbp.broadcast]
    assert flow.sbp.parse("[S(0), B]") == nd
    assert flow.sbp.nd_sbp("(S(0), B)") == nd
    assert flow.sbp.nd_sbp(("S(0)", "B")) == nd
    assert flow.sbp.nd_sbp(flow.sbp.split(0)).to_string() == "S(0)"
    assert len({nd, flow.sbp.parse("(S(0), B)"), flow.sbp.parse("(B, S(0))")}) == 2
    assert pickle.loads(pickle.dumps(nd)) == nd
    with pytest.raises(IndexError):
        nd[2]
    with pytest.raises(flow._C.Error, match=r"cannot parse '\(S\(0\), B\]'"):
        flow.sbp.parse("(S(0), B]")


# ---- placement ---------------------------------------------------------------------------


def test_placement_constructors_and_repr():
    p = flow.placement("cpu", ranks=[0, 1])
    assert p == flow.placement(type="cpu", ranks=[0, 1]) == flow.placement("cpu", [0, 1])
    assert repr(p) == 'oneflowlike.placement(type="cpu", ranks=[0, 1])'
    assert str(p) == repr(p)
    assert p.type == "cpu" and p.ranks == [0, 1] and p.hierarchy == (2,)
    q = flow.placement("cuda", ranks=[[0, 1], [2, 3]])
    assert repr(q) == 'oneflowlike.placement(type="cuda", ranks=[[0, 1], [2, 3]])'
    assert q.to_string() == "cuda[[0, 1], [2, 3]]"
    assert q.ranks == [[0, 1], [2, 3]] and q.mesh == (2, 2) and q.ndim == 2 and q.size == 4
    assert flow.placement("cpu", ranks=range(3)).ranks == [0, 1, 2]
    assert flow.placement("cpu", ranks=((0, 1), (2, 3))).hierarchy == (2, 2)
    cube = flow.placement("cpu", ranks=[[[0, 1], [2, 3]], [[4, 5], [6, 7]]])
    assert cube.hierarchy == (2, 2, 2) and cube.ranks == [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]


def test_placement_equality_hash_and_pickle():
    a = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
    b = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
    assert a == b and hash(a) == hash(b)
    others = [
        flow.placement("cpu", ranks=[0, 1, 2, 3]),
        flow.placement("cuda", ranks=[[0, 1], [2, 3]]),
        flow.placement("cpu", ranks=[[1, 0], [2, 3]]),
    ]
    assert len({a, b, *others}) == 4
    assert a != "cpu"
    assert pickle.loads(pickle.dumps(a)) == a


def test_placement_all_uses_world_size(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "4")
    assert flow.placement.all("cpu") == flow.placement("cpu", ranks=[0, 1, 2, 3])
    assert flow.placement.all("cuda", 2) == flow.placement("cuda", ranks=[0, 1])
    monkeypatch.delenv("WORLD_SIZE")
    assert flow.placement.all("cpu").ranks == [0]


def test_placement_coords_and_axis_groups():
    p = flow.placement("cpu", ranks=[[4, 5], [6, 7]])
    assert 5 in p and 0 not in p
    assert p.coords_of(6) == (1, 0) and p.coords_of(0) is None
    assert p.rank_at([1, 1]) == 7
    assert p.axis_group(5, 0) == [5, 7] and p.axis_group(5, 1) == [4, 5]


@pytest.mark.parametrize(
    "ranks,fragment",
    [
        ([0, 1, 1], "[placement] rank 1 appears twice in cpu ranks [0, 1, 1]"),
        ([0, -1], "[placement] rank -1 is negative"),
        ([[0, 1], [2]], "[placement] ranks [[0, 1], [2]] are ragged"),
        ([[0, 1], 2], "[placement] ranks [[0, 1], 2] must be a nested list of ints of one depth"),
        ([], "[placement] ranks [] hold an empty list"),
        (["a"], "must be a nested list of ints"),
    ],
)
def test_placement_errors(ranks, fragment):
    with pytest.raises(flow._C.Error) as e:
        flow.placement("cpu", ranks=ranks)
    assert fragment in str(e.value)


def test_placement_unknown_type():
    with pytest.raises(flow._C.Error, match=r"\[placement\] unknown device type 'tpu'"):
        flow.placement("tpu", ranks=[0])


# ---- shards ------------------------------------------------------------------------------


def test_local_shapes_on_2x2():
    p = flow.placement("cpu", ranks=[[0, 1], [2, 3]])

    def shapes(shape, sbp):
        return [flow._C.local_shape(shape, sbp, p, p.coords_of(r)) for r in range(4)]

    s0 = flow.sbp.split(0)
    assert shapes([5, 3], [s0, flow.sbp.split(1)]) == [(3, 2), (3, 1), (2, 2), (2, 1)]
    assert shapes([7, 2], [s0, s0]) == [(2, 2), (2, 2), (2, 2), (1, 2)]
    assert shapes([5, 3], [flow.sbp.broadcast, flow.sbp.partial_sum]) == [(5, 3)] * 4
    assert flow._C.local_ranges([7, 2], "(S(0), S(0))", p, [1, 1]) == [(6, 7), (0, 2)]
    assert [flow._C.split_range(2, 4, r) for r in range(4)] == [(0, 1), (1, 2), (2, 2), (2, 2)]


def test_validate_sbp_names_shape_sbp_and_placement():
    p = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
    with pytest.raises(flow._C.Error) as e:
        flow._C.validate_sbp("to_global", [4, 3], [flow.sbp.split(2), flow.sbp.broadcast], p)
    assert str(e.value) == (
        "[to_global] sbp (S(2), B) does not fit tensor of shape (4, 3) on placement "
        "cpu[[0, 1], [2, 3]]: split axis 2 is out of range for 2 dimensions"
    )
    with pytest.raises(flow._C.Error, match="1 sbp for a 2-d mesh"):
        flow._C.validate_sbp("to_global", [4, 3], flow.sbp.split(0), p)
