"""A rank that never arrives. usage: timeout_worker.py ABSENT_RANK PHASE

PHASE "init": ABSENT_RANK never joins the job; "collective": it joins, then skips an
all_reduce. It sleeps instead; the others must raise within OFL_COMM_TIMEOUT_S and print the
error as JSON before exiting non-zero.
"""

import sys
import time

import oneflowlike as flow
import oneflowlike.distributed as dist
from _common import report


def main():
    absent, phase = int(sys.argv[1]), sys.argv[2]
    rank = dist.get_rank()
    if rank == absent and phase == "init":
        time.sleep(120)
    start = time.monotonic()
    try:
        dist.init()
        if rank == absent:
            time.sleep(120)
        start = time.monotonic()
        dist.all_reduce(flow.ones(4))
    except Exception as e:  # noqa: BLE001 - the error itself is what the test reads
        report(rank=rank, error=f"{type(e).__name__}: {e}", seconds=time.monotonic() - start)
        raise
    report(rank=rank, error=None)


if __name__ == "__main__":
    main()
