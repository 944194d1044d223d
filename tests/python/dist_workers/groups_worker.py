"""Sub-groups: mesh axes of a 2x2 mesh, a reordered group, a group of one, nested use.

Run with 4 ranks. Creating a group is collective over its members only, so ranks 0 and 1 make
[0, 1] while ranks 2 and 3 make [2, 3] at the same time.
"""

import numpy as np

import oneflowlike as flow
import oneflowlike.distributed as dist
from _common import check, report

R = dist.get_rank()
assert dist.get_world_size() == 4, "run with 4 ranks"


def value(rank):
    return flow.tensor(np.full(3, rank + 1, np.float32))


def main():
    row = dist.new_group([0, 1] if R < 2 else [2, 3])  # mesh axis 1 of [[0, 1], [2, 3]]
    col = dist.new_group([R % 2, R % 2 + 2])  # mesh axis 0
    assert row.size() == 2 and row.rank() == R % 2 and list(row.ranks()) == sorted(row.ranks())
    assert dist.get_rank(col) == R // 2 and dist.get_world_size(col) == 2
    check("row all_reduce", dist.all_reduce(value(R), group=row), [2 * (R // 2) * 2 + 3] * 3)
    check("col all_reduce", dist.all_reduce(value(R), group=col), [R % 2 * 2 + 4] * 3)

    # Asking again gives the cached group; group order is the order given.
    again = dist.new_group([0, 1] if R < 2 else [2, 3])
    assert list(again.ranks()) == list(row.ranks())
    odd_first = dist.new_group([3, 1] if R % 2 else [2, 0])
    assert odd_first.rank() == (0 if R >= 2 else 1)
    out = dist.all_gather(value(R), group=odd_first)
    first, second = (3, 1) if R % 2 else (2, 0)
    check("reordered all_gather", out, np.repeat([first + 1, second + 1], 3))
    root_value = dist.broadcast(value(R), src=0, group=odd_first)
    check("group broadcast from its rank 0", root_value, [first + 1] * 3)

    alone = dist.new_group([R])
    assert alone.size() == 1
    check("group of one", dist.all_reduce(value(R), group=alone), [R + 1] * 3)

    dist.barrier(group=row)
    if R in (1, 2, 3):  # a group not holding rank 0, while rank 0 waits in the world barrier
        g = dist.new_group([1, 2, 3])
        check("three-rank group", dist.all_reduce(value(R), group=g), [2 + 3 + 4] * 3)
    dist.barrier()
    check("world all_reduce", dist.all_reduce(value(R)), [10] * 3)
    report(rank=R, groups="ok")


if __name__ == "__main__":
    main()
