"""Boxing: converting a global tensor between split, broadcast and partial-sum layouts.

    python -m oneflowlike.distributed.launch --nproc_per_node 2 examples/tour/06_boxing.py

`to_global(sbp=...)` on a global tensor keeps its logical value and changes how the ranks hold
it; the framework picks the collective (boxing). Each conversion below is checked twice: the
logical tensor is unchanged, and each rank's local piece is the slice (or the copy) of the
one-device array its new SBP says (for P, any addends that sum to it). And the collectives that
ran, which `flow.boxing.comm_log()` records, are the one the conversion needs.
"""

import numpy as np

import oneflowlike as flow

S0, S1, B, P = flow.sbp.split(0), flow.sbp.split(1), flow.sbp.broadcast, flow.sbp.partial_sum
rank = flow.env.get_rank()
placement = flow.placement("cpu", ranks=[0, 1])

# Two addends, one per rank, and their sum: the logical tensor of every layout below.
addends = np.random.default_rng(0).standard_normal((2, 4, 6)).astype(np.float32)
logical = addends.sum(axis=0)
partial = flow.tensor(addends[rank]).to_global(placement, P)  # P: each rank's data an addend
assert np.allclose(partial.numpy(), logical, rtol=1e-6)


def expected_local(sbp):
    if sbp == S0:
        return logical[2 * rank : 2 * rank + 2]
    if sbp == S1:
        return logical[:, 3 * rank : 3 * rank + 3]
    if sbp == B:
        return logical
    return None  # P: any addends summing to the logical tensor (here, zeros except one piece)


start = {"P": partial}
start["B"] = partial.to_global(sbp=B)
start["S(0)"] = partial.to_global(sbp=S0)
conversions = [  # from, to, the one collective it takes (None: each rank computes its piece)
    ("S(0)", B, "all_gather"),
    ("B", S0, None),  # each rank keeps its rows
    ("P", B, "all_reduce(sum)"),
    ("P", S0, "reduce_scatter(sum)"),
    ("S(0)", S1, "all_to_all"),
    ("B", S1, None),
    ("B", P, None),  # rank 0 keeps the data, the other rank zeros
    ("S(0)", P, None),  # each rank its rows, zeros elsewhere
]
for name, sbp, collective in conversions:
    with flow.boxing.comm_log() as log:
        y = start[name].to_global(sbp=sbp)
    assert y.sbp == (sbp,)
    if expected_local(sbp) is not None:
        assert np.allclose(y.to_local().numpy(), expected_local(sbp), rtol=1e-6), (name, sbp)
    assert np.allclose(y.numpy(), logical, rtol=1e-6), (name, sbp)
    assert [c.split()[0] for c in log] == ([collective] if collective else []), (name, sbp, log)
    if rank == 0:
        print(f"{name:>4} -> {str(sbp).split('.')[-1]:<14} {', '.join(log) or 'no communication'}")

if rank == 0:
    print("every conversion kept the logical tensor and gave each rank its one-device slice")
