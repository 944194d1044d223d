"""Every (from, to) pair of layouts on this world's placement: reshard, then compare the
logical tensor (numpy) and, for targets without partials, this rank's shard. Reports failures.
Arguments: the mesh ("1d" or "2x2") and the placement's device type ("cpu" or "cuda")."""

import itertools
import sys

import numpy as np

import oneflowlike as flow
import oneflowlike.distributed as dist
from _common import report

SBPS = ["S(0)", "S(1)", "B", "P(sum)", "P(max)", "P(min)"]


def layouts(ndim):
    if ndim == 1:
        return [flow._C.NdSbp(s) for s in SBPS]
    small = ["S(0)", "S(1)", "B", "P(sum)"]  # 2-d: the pairs of the common four
    return [flow._C.NdSbp(f"({a}, {b})") for a, b in itertools.product(small, small)]


def main():
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = sys.argv[1] if len(sys.argv) > 1 else "1d"
    ranks = list(range(world)) if mesh == "1d" else [[0, 1], [2, 3]]
    device_type = sys.argv[2] if len(sys.argv) > 2 else "cpu"
    place = flow.placement(device_type, ranks=ranks)
    coords = place.coords_of(rank)
    problems = []
    for shape, dtype in [((5, 3), np.float32), ((2, 3), np.int64)]:
        full_np = np.arange(np.prod(shape)).reshape(shape).astype(dtype) - 4
        full = flow.tensor(full_np)
        cands = layouts(len(place.hierarchy))
        for src, dst in itertools.product(cands, cands):
            x = flow._global.from_full(full, place, src, sync_data=False)
            y = x.to_global(sbp=dst)
            if y.to_local().device.type != device_type:
                problems.append(f"{src.to_string()}->{dst.to_string()} on {y.to_local().device}")
            if not np.array_equal(y.numpy(), full_np):
                problems.append(f"{shape} {src.to_string()}->{dst.to_string()} logical")
            if not any(s.kind == "partial" for s in dst):
                want = flow._C.shard_of(full, place, dst, list(coords)).numpy()
                if not np.array_equal(y.to_local().cpu().numpy(), want):
                    problems.append(f"{shape} {src.to_string()}->{dst.to_string()} shard")
    report(rank=rank, problems=problems)


if __name__ == "__main__":
    main()
