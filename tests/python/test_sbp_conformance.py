"""Runs the SBP conformance checker (sbp_conformance.py): no declared signature of any op may
give a wrong logical result on 2 or 3 ranks, and every registered op is either checked or
listed with the reason it has no rule of its own. `python tests/python/sbp_conformance.py`
prints the valid signatures that are not declared."""

import sbp_conformance


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
