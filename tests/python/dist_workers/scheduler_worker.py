"""A rank started by a scheduler (srun, mpirun) rather than our launcher: it joins from the
scheduler's environment alone, all-reduces its rank + 1 and prints one JSON line."""

import json

import oneflowlike as flow
import oneflowlike.distributed as dist

dist.init()
t = flow.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print(json.dumps({"rank": dist.get_rank(), "world": dist.get_world_size(),
                  "local_rank": dist.get_local_rank(), "sum": t.item()}), flush=True)  # fmt: skip
