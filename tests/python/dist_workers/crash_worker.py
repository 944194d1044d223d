"""A rank that dies mid-job. usage: crash_worker.py CRASH_RANK HOW  (HOW: "exit:N" or "kill")

Every rank loops on all_reduce; after a few rounds CRASH_RANK exits or SIGKILLs itself.
"""

import os
import signal
import sys

import oneflowlike as flow
import oneflowlike.distributed as dist


def main():
    crash, how = int(sys.argv[1]), sys.argv[2]
    rank = dist.get_rank()
    for step in range(100000):
        if step == 10 and rank == crash:  # after every rank has printed step 4
            if how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(int(how.split(":")[1]))
        dist.all_reduce(flow.ones(1024))
        if step == 4:
            print(f"rank {rank} at step {step}", flush=True)


if __name__ == "__main__":
    main()
