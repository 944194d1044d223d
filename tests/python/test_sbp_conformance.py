"""Runs the SBP conformance checker (sbp_conformance.py): no declared signature of any op may
give a wrong logical result on 2 or 3 ranks, and every registered op is either checked or
listed with the reason it has no rule of its own. `python tests/python/sbp_conformance.py`
prints the valid signatures that are not declared."""

import pytest
import sbp_conformance

import oneflowlike as flow


def test_every_declared_signature_is_exact_and_every_op_is_covered():
    result, uncovered = sbp_conformance.report()
    wrong = {name: w for name, (_, w, _) in result.items() if w}
    assert not wrong, wrong
    assert not uncovered, f"registered ops with no conformance case: {uncovered}"


def test_the_checker_catches_a_wrong_signature():
    """A checker that cannot fail is no checker: relu does not pass P(sum) through."""
    fn, arrays = sbp_conformance.CASES["relu"]
    bad = (("P(sum)",), ("P(sum)",))
    op, wrong, _ = sbp_conformance.check_case("relu", fn, arrays, 2, also_declared=[bad])
    assert op == "relu" and wrong == [bad]


def _outputs(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _run(name, fn, arrays, device):
    """The case's outputs and its inputs' gradients (for ones as output gradients) on device."""
    leaves = []
    for a in arrays:
        t = flow.tensor(a).to(device)
        leaves.append(t.requires_grad_() if a.dtype.kind == "f" else t)
    # An in-place case writes into its first input: a copy of the leaf.
    args = [t.clone() if name.endswith("_") and i == 0 else t for i, t in enumerate(leaves)]
    outs = [o for o in _outputs(fn(*args)) if isinstance(o, flow.Tensor)]
    grads = [None] * len(leaves)
    with_grad = [o for o in outs if o.requires_grad]
    wrt = [t for t in leaves if t.requires_grad]
    if with_grad and wrt:
        ones = [flow.ones(*o.shape, dtype=o.dtype, device=device) for o in with_grad]
        got = flow.autograd.grad(with_grad, wrt, ones, allow_unused=True)
        it = iter(got)
        grads = [next(it) if t.requires_grad else None for t in leaves]
    return outs, grads


def _signature(tensors):
    return [None if t is None else (tuple(t.shape), t.dtype) for t in tensors]


def test_every_case_on_meta_gives_the_cpu_shapes_and_dtypes_and_input_gradients():
    mismatched, with_grads = {}, 0
    for name, (fn, arrays) in sbp_conformance.CASES.items():
        if name in sbp_conformance.DATA_DEPENDENT:
            with pytest.raises(RuntimeError, match="depends on the data"):
                _run(name, fn, arrays, "meta")
            continue
        cpu_outs, cpu_grads = _run(name, fn, arrays, "cpu")
        with_grads += any(g is not None for g in cpu_grads)
        meta_outs, meta_grads = _run(name, fn, arrays, "meta")
        assert all(o.device.type == "meta" for o in meta_outs), name
        want = (_signature(cpu_outs), _signature(cpu_grads))
        got = (_signature(meta_outs), _signature(meta_grads))
        if want != got:
            mismatched[name] = (want, got)
    assert not mismatched, mismatched
    assert with_grads > len(sbp_conformance.CASES) // 2  # the backward ran for most cases
