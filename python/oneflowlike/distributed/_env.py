"""This process's place in the job, as the launcher describes it in environment variables."""

import datetime
import os
import socket
from dataclasses import dataclass

DEFAULT_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class JobEnv:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    local_world_size: int = 1
    node_rank: int = 0
    nnodes: int = 1
    master_addr: str = "127.0.0.1"
    master_port: int = 0
    token: str = ""


def _int(environ, name, default):
    text = environ.get(name)
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise RuntimeError(f"[distributed] {name}={text!r} is not an integer") from None


def read_env(environ=None):
    """A JobEnv from RANK, WORLD_SIZE, LOCAL_RANK, ...; unset means a single process."""
    e = os.environ if environ is None else environ
    rank, world = _int(e, "RANK", 0), _int(e, "WORLD_SIZE", 1)
    if world < 1 or not 0 <= rank < world:
        raise RuntimeError(f"[distributed] RANK={rank} is outside WORLD_SIZE={world}")
    local_world = _int(e, "LOCAL_WORLD_SIZE", world)
    local_rank = _int(e, "LOCAL_RANK", rank % max(local_world, 1))
    if not 0 <= local_rank < local_world:
        raise RuntimeError(
            f"[distributed] LOCAL_RANK={local_rank} is outside LOCAL_WORLD_SIZE={local_world}"
        )
    node_rank = _int(e, "GROUP_RANK", _int(e, "NODE_RANK", rank // max(local_world, 1)))
    nnodes = _int(e, "GROUP_WORLD_SIZE", max(1, world // max(local_world, 1)))
    port = _int(e, "MASTER_PORT", 0)
    if world > 1 and (not e.get("MASTER_ADDR") or port <= 0):
        raise RuntimeError(
            f"[distributed] WORLD_SIZE={world} needs MASTER_ADDR and MASTER_PORT (got "
            f"{e.get('MASTER_ADDR')!r}, {e.get('MASTER_PORT')!r}); start the program with "
            "python -m oneflowlike.distributed.launch"
        )
    return JobEnv(
        rank=rank,
        world_size=world,
        local_rank=local_rank,
        local_world_size=local_world,
        node_rank=node_rank,
        nnodes=nnodes,
        master_addr=e.get("MASTER_ADDR") or "127.0.0.1",
        master_port=port,
        token=e.get("OFL_STORE_TOKEN", ""),
    )


def timeout_seconds(timeout=None):
    """Seconds from a number, a timedelta, or (None) OFL_COMM_TIMEOUT_S, default 300."""
    if timeout is None:
        text = os.environ.get("OFL_COMM_TIMEOUT_S", "")
        try:
            timeout = float(text) if text else DEFAULT_TIMEOUT_S
        except ValueError:
            raise RuntimeError(f"[distributed] OFL_COMM_TIMEOUT_S={text!r} is not a number")
    if isinstance(timeout, datetime.timedelta):
        timeout = timeout.total_seconds()
    timeout = float(timeout)
    if timeout <= 0:
        raise ValueError(f"[distributed] timeout must be positive, got {timeout} s")
    return timeout


def resolve(host):
    """host as an IPv4 address (names such as localhost are resolved; failures pass through)."""
    try:
        return socket.gethostbyname(host)
    except OSError:
        return host


def local_address(master_addr, master_port=0):
    """The address this machine uses to reach master_addr, so peers on other nodes can reach
    our communicator; OFL_COMM_HOST overrides it. Connecting a UDP socket sends nothing."""
    override = os.environ.get("OFL_COMM_HOST")
    if override:
        return override
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((master_addr, master_port or 9))
            return s.getsockname()[0]
    except OSError:
        return "127.0.0.1"
