"""A short job for multi-node runs: all_reduce, all_gather_v and a barrier; prints JSON."""

import os
import socket

import numpy as np

import oneflowlike as flow
import oneflowlike.distributed as dist
from _common import report


def main():
    dist.init()
    rank, size = dist.get_rank(), dist.get_world_size()
    x = flow.tensor(np.arange(5, dtype=np.float32) + rank)
    dist.all_reduce(x)
    parts = dist.all_gather_v(
        flow.tensor(np.full(rank + 1, rank, np.int64)), list(range(1, size + 1))
    )
    dist.barrier()
    report(
        rank=rank,
        size=size,
        node=dist.get_node_rank(),
        local_rank=dist.get_local_rank(),
        sum=np.array(x.numpy()).tolist(),
        gathered=np.array(parts.numpy()).tolist(),
        host=socket.gethostname(),
        addr=dist._env.local_address(os.environ["MASTER_ADDR"]),  # where our communicator listens
    )


if __name__ == "__main__":
    main()
