"""Every rank contributes its rank number; prints what each collective gives back.

python -m oneflowlike.distributed.launch --nproc_per_node 4 examples/distributed/collectives.py
"""

import sys

import oneflowlike as flow
import oneflowlike.distributed as dist


def main():
    rank, world = dist.get_rank(), dist.get_world_size()
    x = flow.full((2,), float(rank))
    dist.all_reduce(x, op="sum")  # in place: 0 + 1 + ... + (world - 1) everywhere
    gathered = dist.all_gather(flow.tensor([rank]))  # (world,) in rank order
    counts = [r + 1 for r in range(world)]  # uneven: rank r holds r + 1 elements
    uneven = dist.all_gather_v(flow.full((rank + 1,), rank), counts)
    evens = dist.new_group(list(range(0, world, 2))) if rank % 2 == 0 else None
    if evens is not None:
        y = flow.tensor([1.0])
        evens.all_reduce(y)  # counts the even ranks
    dist.barrier()
    line = (
        f"rank {rank}/{world}: all_reduce {x.tolist()} all_gather {gathered.tolist()} "
        f"all_gather_v {uneven.tolist()}"
        + (f" even-group size {int(y.item())}" if evens is not None else "")
    )
    # One write per line: the ranks share the terminal, and print() writes the newline apart.
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
