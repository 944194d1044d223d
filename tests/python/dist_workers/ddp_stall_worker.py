"""A peer that stalls in the middle of DDP training: rank 1 stops before its backward. Rank 0's
backward must raise within OFL_COMM_TIMEOUT_S naming rank 1, and print the error as JSON.
"""

import time

import oneflowlike as flow
import oneflowlike.distributed as dist
from oneflowlike.nn.parallel import DistributedDataParallel as DDP
from _common import report


def main():
    rank = dist.get_rank()
    ddp = DDP(flow.nn.Linear(4, 2))
    loss = ddp(flow.ones(3, 4)).sum()
    if rank == 1:
        time.sleep(120)
    start = time.monotonic()
    try:
        loss.backward()
    except Exception as e:  # noqa: BLE001 - the error itself is what the test reads
        report(rank=rank, error=f"{type(e).__name__}: {e}", seconds=time.monotonic() - start)
        raise
    report(rank=rank, error=None)


if __name__ == "__main__":
    main()
