"""DDP against ranks that misbehave. usage: ddp_hostile_worker.py stall|mismatch

stall: rank 1 stops before its backward; rank 0's backward must raise within
OFL_COMM_TIMEOUT_S naming rank 1. mismatch: rank r wraps Linear(4, 2 + r); construction must
raise on every rank naming each rank's parameters. Each rank prints its error as JSON.
"""

import sys
import time

import oneflowlike as flow
import oneflowlike.distributed as dist
from oneflowlike.nn.parallel import DistributedDataParallel as DDP
from _common import report


def main():
    rank, mode = dist.get_rank(), sys.argv[1]
    start = time.monotonic()
    try:
        if mode == "mismatch":
            DDP(flow.nn.Linear(4, 2 + rank))
        else:
            ddp = DDP(flow.nn.Linear(4, 2))  # kept: its hooks hold it weakly
            loss = ddp(flow.ones(3, 4)).sum()
            if rank == 1:
                time.sleep(120)
            start = time.monotonic()
            loss.backward()
    except Exception as e:  # noqa: BLE001 - the error itself is what the test reads
        report(rank=rank, error=f"{type(e).__name__}: {e}", seconds=time.monotonic() - start)
        raise
    report(rank=rank, error=None)


if __name__ == "__main__":
    main()
