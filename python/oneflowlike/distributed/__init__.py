"""Multi-process runtime: a default world communicator built from the launcher's environment
(RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, OFL_STORE_TOKEN), and thin wrappers over it.

Collectives initialise the world on first use; `init()` does it explicitly. Rank queries read
the environment without a rendezvous, so asking for the rank never blocks. Without launcher
variables the job is one process with a local communicator that needs no backend.
"""

import atexit
import os
import threading

from oneflowlike import _C

from ._env import local_address, read_env, resolve, timeout_seconds

__all__ = [
    "ReduceOp",
    "init",
    "destroy",
    "is_initialized",
    "world",
    "store",
    "get_rank",
    "get_world_size",
    "get_local_rank",
    "get_local_world_size",
    "get_node_rank",
    "get_node_size",
    "new_group",
    "barrier",
    "all_reduce",
    "all_gather",
    "all_gather_v",
    "reduce_scatter",
    "reduce_scatter_v",
    "all_to_all",
    "all_to_all_v",
    "broadcast",
    "reduce",
    "gather",
    "scatter",
    "send",
    "recv",
]


class ReduceOp:
    """Reduction names accepted by the collectives (plain strings work too)."""

    SUM = "sum"
    PRODUCT = "product"
    MAX = "max"
    MIN = "min"
    AVG = "avg"


_lock = threading.RLock()
_world = None
_store = None
_job = None


def _comm_module():
    comm = getattr(_C, "comm", None)
    if comm is None:
        raise RuntimeError("[distributed] this build of oneflowlike has no communication module")
    return comm


def _job_env():
    global _job
    if _job is None:
        _job = read_env()
    return _job


def _device_backend(backend):
    """How CUDA tensors travel: "nccl", "gloo" (host staging) or "auto" (NCCL where every rank
    has its own GPU). CPU tensors always take Gloo. OFL_COMM_BACKEND chooses when backend is None.
    """
    backend = backend or os.environ.get("OFL_COMM_BACKEND") or "auto"
    choices = {"auto": "auto", "nccl": "nccl", "gloo": "gloo", "cpu": "gloo"}
    if backend not in choices:
        raise ValueError(
            f"[distributed.init] backend {backend!r} is not available; use 'auto', 'nccl' or 'gloo'"
        )
    return choices[backend]


def init(backend=None, timeout=None):
    """Joins the job described by the environment (idempotent); returns the world communicator.
    Rank 0 hosts the rendezvous store; timeout (seconds or timedelta) bounds every wait."""
    global _world, _store
    with _lock:
        if _world is not None:
            return _world
        device_backend = _device_backend(backend)
        env = _job_env()
        seconds = timeout_seconds(timeout)
        comm = _comm_module()
        if env.world_size == 1:
            _world = _local_world(comm, seconds)
            return _world
        master = resolve(env.master_addr)
        host = local_address(master, env.master_port)
        store = comm.TcpStore(
            master, env.master_port, env.rank == 0, token=env.token, timeout_s=seconds
        )
        _world = comm.new_communicator(
            store, env.rank, env.world_size, host, seconds, device_backend=device_backend
        )
        _store = store
        return _world


def init_process_group(
    backend=None,
    init_method=None,
    timeout=None,
    world_size=-1,
    rank=-1,
    store=None,
    group_name="",
    pg_options=None,
    device_id=None,
):
    """torch.distributed's spelling of init(): joins the job at MASTER_ADDR:MASTER_PORT (env://).
    rank and world_size, when given (a job started with multiprocessing rather than the
    launcher), stand for RANK and WORLD_SIZE. Returns None, as PyTorch's."""
    if init_method not in (None, "env://"):
        raise ValueError(
            f"[init_process_group] init_method {init_method!r} is not supported: only env:// "
            "(MASTER_ADDR and MASTER_PORT in the environment, as the launcher sets them)"
        )
    if store is not None:
        raise ValueError("[init_process_group] store= is not supported: ranks meet at env://")
    global _job
    given = {"RANK": rank, "WORLD_SIZE": world_size}
    for name, value in given.items():
        if value is not None and value >= 0:
            os.environ[name] = str(value)
            _job = None  # read again
    init(backend=backend, timeout=timeout)


def destroy_process_group(group=None):
    """torch.distributed's spelling of destroy() (a group passed is simply dropped)."""
    if group is None:
        destroy()


def is_available():
    return hasattr(_comm_module_or_none(), "Communicator")


def _comm_module_or_none():
    return getattr(_C, "comm", None)


def get_backend(group=None):
    """The backend CPU tensors travel by ("gloo"); CUDA tensors take NCCL where available."""
    return "gloo"


def _local_world(comm, seconds):
    if hasattr(comm, "local_communicator"):
        return comm.local_communicator()
    return comm.new_communicator(None, 0, 1, "127.0.0.1", seconds)


def destroy():
    """Drops the world communicator, its groups and the store (rank 0's stops serving)."""
    global _world, _store, _job
    with _lock:
        _world, _store, _job = None, None, None


atexit.register(destroy)


def is_initialized():
    return _world is not None


def world():
    """The world communicator, initialising it from the environment on first use."""
    return _world if _world is not None else init()


def store():
    """The rendezvous store (None in a single-process job)."""
    world()
    return _store


def _group(group):
    return world() if group is None else group


def get_rank(group=None):
    """This process's rank in group (default: the world)."""
    if group is not None:
        return group.rank()
    return _world.rank() if _world is not None else _job_env().rank


def get_world_size(group=None):
    if group is not None:
        return group.size()
    return _world.size() if _world is not None else _job_env().world_size


def get_local_rank():
    """This process's index among the ranks on its node."""
    return _job_env().local_rank


def get_local_world_size():
    return _job_env().local_world_size


def get_node_rank():
    return _job_env().node_rank


def get_node_size():
    """The number of nodes in the job."""
    return _job_env().nnodes


def new_group(ranks):
    """The communicator over ranks (global ranks, in the order given). Collective over the
    members only; cached, so asking again is free."""
    return world().new_group(list(ranks))


def barrier(group=None):
    _group(group).barrier()


def all_reduce(tensor, op="sum", group=None, async_op=False):
    """Reduces tensor in place over the group; returns it. With async_op=True it runs on the
    group's background thread and returns a Work: wait() on it before touching the tensor, and
    call no blocking collective of the same group meanwhile."""
    if async_op:
        return _group(group).all_reduce_async(tensor, op=op)
    _group(group).all_reduce(tensor, op=op)
    return tensor


def all_gather(tensor, group=None):
    """Every rank's tensor, in rank order."""
    return _group(group).all_gather(tensor)


def all_gather_v(tensor, counts, group=None):
    """Rank r contributes counts[r] elements; returns the sum(counts) elements in rank order."""
    return _group(group).all_gather_v(tensor, list(counts))


def reduce_scatter(tensor, op="sum", group=None):
    """Reduces tensor over the group; rank r gets block r of size() equal blocks."""
    return _group(group).reduce_scatter(tensor, op=op)


def reduce_scatter_v(tensor, counts, op="sum", group=None):
    return _group(group).reduce_scatter_v(tensor, list(counts), op=op)


def all_to_all(tensor, group=None):
    """Block j of this rank's tensor goes to rank j, landing at block rank()."""
    return _group(group).all_to_all(tensor)


def all_to_all_v(tensor, send_counts, recv_counts, group=None):
    return _group(group).all_to_all_v(tensor, list(send_counts), list(recv_counts))


def broadcast(tensor, src=0, group=None, async_op=False):
    """Copies src's tensor into every rank's tensor in place; returns it (a Work to wait() on
    with async_op=True, as all_reduce)."""
    if async_op:
        return _group(group).broadcast_async(tensor, src)
    _group(group).broadcast(tensor, src)
    return tensor


def reduce(tensor, dst=0, op="sum", group=None):
    """The reduction lands in dst's tensor in place; other ranks' tensors are left as they were."""
    _group(group).reduce(tensor, dst, op=op)
    return tensor


def gather(tensor, dst=0, counts=None, group=None):
    """Every rank's tensor concatenated on dst (counts for uneven sizes); None elsewhere."""
    return _group(group).gather(tensor, dst, None if counts is None else list(counts))


def scatter(tensor, src=0, counts=None, group=None, like=None):
    """src's tensor split into size() blocks (or counts); rank r receives block r, flat. Other
    ranks pass a tensor of the same shape, or None with `like` giving the dtype (and, without
    counts, the size)."""
    counts = None if counts is None else list(counts)
    return _group(group).scatter(tensor, src, counts, like=like)


def send(tensor, dst, tag=0, group=None):
    _group(group).send(tensor, dst, tag=tag)


def recv(tensor, src, tag=0, group=None):
    """Receives into tensor in place; returns it."""
    _group(group).recv(tensor, src, tag=tag)
    return tensor
