"""Global tensors in Python: to_global / to_local, sbp / placement, numpy() of the logical
tensor, creation with placement= and sbp=, and flow.boxing (cost, explain, comm_log, cost_log).

Meta global tensors (device="meta", e.g. flow.randn(..., device="meta", placement=p, sbp=s)) may
sit on a placement larger than the world: ops plan signatures, boxing and costs for every rank
and run nothing."""

import contextlib
import os

from . import _C, cuda, distributed


def _world():
    return distributed.world()


def _nd_sbp(sbp, placement):
    """An NdSbp from an Sbp, a tuple/list of them, a string like "(S(0), B)" or an NdSbp."""
    if sbp is None:
        raise ValueError("[to_global] needs sbp= (e.g. flow.sbp.split(0) or a tuple per mesh axis)")
    if isinstance(sbp, _C.Sbp):
        sbp = [sbp]  # one per mesh axis: validation names the mismatch on n-d placements
    return _C.NdSbp(sbp)


def shard_device(placement):
    """The device of this rank's shard on `placement`: the CPU, or on a "cuda" placement the
    GPU LOCAL_RANK % device_count (one GPU per rank, as OneFlow places them; cuda:0 where none is
    visible, which raises when used)."""
    if placement.type != "cuda":
        return placement.type
    count = cuda.device_count()
    return f"cuda:{int(os.environ.get('LOCAL_RANK', 0)) % count if count else 0}"


def to_global(self, placement=None, sbp=None, check_meta=False, sync_data=True):
    """A local tensor becomes this rank's shard (moved to the placement's device for this rank),
    with OneFlow's semantics: along a split mesh axis each rank's data is its shard, along a
    partial one its addend, and along a broadcast one the group's first member's data (rank 0's
    for a 1-d B) is sent to the others, so that every rank holds one logical tensor.
    ``sync_data=False`` skips that broadcast for callers whose ranks already hold the same data
    (the same file, the same seed); ranks that differ then hold different "replicas".
    A global tensor is resharded (boxing), and moved across device types shard by shard."""
    if not self.is_global:
        if placement is None:
            raise ValueError("[to_global] a local tensor needs placement=")
        nd = _nd_sbp(sbp, placement)
        if self.is_traced:  # made inside build(): a boxing node; it may only become broadcast
            return _C.reshard(self, placement, nd, _world())
        local = self
        if self.device.type != "meta" and str(self.device) != shard_device(placement):
            _C.check_placement_in_world(placement, _world(), "to_global")  # before moving
            local = self.to(shard_device(placement))
        return _C.make_global(local, placement, nd, _world(), check_meta, sync_data)
    placement = placement if placement is not None else self.placement
    nd = None if sbp is None else _nd_sbp(sbp, placement)  # None: keep the layout
    source = self
    if placement.type != self.placement.type:  # same layout on the same ranks, other device
        _C.check_placement_in_world(placement, _world(), "to_global")  # before moving
        moved = _C.Placement(placement.type, self.placement.ranks)
        local = _C.to_local(self).to(shard_device(moved))
        source = _C.make_global(local, moved, _C.NdSbp(list(self.sbp)), _world(), False, False)
    return _C.reshard(source, placement, nd, _world())


def like_global(value, param):
    """`value`, a whole logical tensor (as loaded from a file), laid out as the global `param`:
    each rank keeps its shard of the placement's first rank's value. Anything else is returned
    as it is."""
    if param.is_global and not value.is_global and tuple(value.shape) == tuple(param.shape):
        return from_full(value, param.placement, _C.NdSbp(list(param.sbp)), sync_data=True)
    return value


def to_local(self):
    return _C.to_local(self) if self.is_global else self


def _placement(self):
    return _C.global_placement(self) if self.is_global else None


def _sbp(self):
    return tuple(_C.global_sbp(self)) if self.is_global else None


def local_shapes(self):
    """Every rank's shard shape of a global tensor, as {rank: shape}, computed from its layout
    (no communication): also for meta tensors on a placement larger than the world."""
    if not self.is_global:
        raise RuntimeError("[local_shapes] expects a global tensor, got a local one")
    return _C.global_local_shapes(self)


def install(tensor_cls):
    local_numpy = tensor_cls.numpy

    def numpy(self):
        """The whole logical array on every rank for a global tensor."""
        if self.is_global:  # from any device: the logical tensor is not this rank's memory
            full = _C.global_to_full(self, _world())
            return local_numpy(full if full.device.type in ("cpu", "meta") else full.cpu())
        return local_numpy(self)

    tensor_cls.numpy = numpy
    tensor_cls.to_global = to_global
    tensor_cls.to_local = to_local
    tensor_cls.placement = property(_placement)
    tensor_cls.sbp = property(_sbp)
    tensor_cls.local_shapes = local_shapes


def from_full(full, placement, sbp, sync_data):
    """A global tensor from the whole tensor `full` on every rank: each rank keeps its shard.
    With sync_data, the placement's first rank's `full` is the logical tensor (broadcast to the
    others first, as OneFlow does for data given to a global tensor); without, the caller knows
    the ranks hold the same tensor (the same file, a deterministic fill) and nothing moves."""
    moved = full.device.type != "meta" and str(full.device) != shard_device(placement)
    nd = _nd_sbp(sbp, placement)
    if sync_data and full.device.type != "meta":
        whole = _C.NdSbp([_C.Sbp.broadcast()] * len(nd))
        synced = to_global(full, placement, whole, sync_data=True)
        return synced if nd == whole else _C.reshard(synced, placement, nd, _world())
    device = _C.device(shard_device(placement)) if moved else None
    return _C.global_from_full(full, placement, nd, _world(), device)


class _Boxing:
    """flow.boxing: the cost model's view of a reshard, its cluster spec, a log of collectives
    run and a log of predicted costs."""

    ClusterSpec = _C.ClusterSpec

    @staticmethod
    def cost(x, placement, sbp):
        seconds, _, _ = _C.boxing_plan(
            list(x.shape), x.dtype, x.placement, _C.global_sbp(x), placement,
            _nd_sbp(sbp, placement),
        )  # fmt: skip
        return seconds

    @staticmethod
    def explain(x, placement, sbp, file=None):
        _, text, _ = _C.boxing_plan(
            list(x.shape), x.dtype, x.placement, _C.global_sbp(x), placement,
            _nd_sbp(sbp, placement),
        )  # fmt: skip
        print(text, file=file)
        return text

    @staticmethod
    def set_cluster_spec(spec):
        """The machine the cost model prices with (a ClusterSpec, e.g. ClusterSpec.h100_ib(128,
        8) to plan for a cluster this process does not have); cached plans are dropped."""
        _C.set_cluster_spec(spec)

    @staticmethod
    def get_cluster_spec():
        return _C.get_cluster_spec()

    @staticmethod
    @contextlib.contextmanager
    def comm_log():
        """Records the collectives reshards run inside the block: `with comm_log() as log:`."""
        log = []
        _C.boxing_log_start()
        try:
            yield log
        finally:
            log.extend(_C.boxing_log_stop())

    @staticmethod
    @contextlib.contextmanager
    def cost_log():
        """Records what the cost model predicts for each global op, reshard and fused gradient
        reduction inside the block, as dicts (op, signature, comm_seconds, comm_bytes,
        comm_steps, compute_seconds, flops, steps, text): `with cost_log() as costs:`. Meta
        global tensors on a simulated placement record alike, with nothing run."""
        costs = []
        _C.cost_log_start()
        try:
            yield costs
        finally:
            costs.extend(_C.cost_log_stop())


boxing = _Boxing()
