"""PyTorch's DDP tutorial shape, started without the launcher: Python's multiprocessing spawns
the ranks and init_process_group gets rank and world_size, MASTER_ADDR/PORT from here.

    python ddp_spawn_worker.py PORT
"""

import multiprocessing as mp
import os
import sys

import numpy as np


def demo(rank, world_size, port, queue):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    import oneflowlike as torch
    import oneflowlike.distributed as dist
    from oneflowlike.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(rank)
    model = torch.nn.Sequential(torch.nn.Linear(10, 10), torch.nn.ReLU(), torch.nn.Linear(10, 5))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.001)
    opt.zero_grad()
    torch.nn.MSELoss()(ddp(torch.randn(20, 10)), torch.randn(20, 5)).backward()
    opt.step()
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    everyone = dist.all_gather(flat).numpy().reshape(world_size, -1)
    dist.destroy_process_group()
    queue.put((rank, bool(np.allclose(everyone, everyone[0]))))


if __name__ == "__main__":
    port, world_size = int(sys.argv[1]), 2
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=demo, args=(r, world_size, port, queue)) for r in range(world_size)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    results = sorted(queue.get(timeout=5) for _ in procs)
    print(results)
    sys.exit(0 if results == [(0, True), (1, True)] else 1)
