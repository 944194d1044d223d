"""OneFlow's `flow.env`: this process's place in the job (see oneflowlike.distributed)."""

from . import distributed as _dist


def get_rank():
    """This process's global rank (0 in a single-process job)."""
    return _dist.get_rank()


def get_world_size():
    return _dist.get_world_size()


def get_local_rank():
    """This process's index among the ranks on its node."""
    return _dist.get_local_rank()


def get_local_world_size():
    return _dist.get_local_world_size()


def get_node_size():
    """The number of nodes in the job."""
    return _dist.get_node_size()


def get_node_rank():
    return _dist.get_node_rank()


def is_multi_client():
    """Always true: every rank runs the same program (SPMD), as in OneFlow's multi-client mode."""
    return True
