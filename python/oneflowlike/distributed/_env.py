"""This process's place in the job, as the launcher describes it in environment variables."""

import datetime
import os
import socket
from dataclasses import dataclass

DEFAULT_TIMEOUT_S = 300.0

# Every variable the launcher sets for its ranks (tests and benchmarks clear these to start clean).
JOB_ENV_VARS = (
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "NODE_RANK",
    "GROUP_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "OFL_STORE_TOKEN",
    "OFL_COMM_TIMEOUT_S",
    "OMP_NUM_THREADS",
    "OFL_NUM_THREADS",
)


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


def first_host(nodelist):
    """The first host of a Slurm node list: "node[07-09,12],gpu1" -> "node07"."""
    head, bracket, rest = nodelist.partition("[")
    if "," in head or not bracket:
        return head.split(",", 1)[0].strip()
    ranges, _, suffix = rest.partition("]")
    return f"{head}{ranges.split(',')[0].split('-')[0]}{suffix.split(',')[0]}".strip()


def _tasks_on_node(tasks_per_node, node):
    """This node's task count from SLURM_TASKS_PER_NODE ("4(x2),3": 4, 4, 3)."""
    counts = []
    for item in tasks_per_node.split(","):
        count, _, times = item.partition("(x")
        counts += [int(count)] * (int(times.rstrip(")")) if times else 1)
    return counts[node] if 0 <= node < len(counts) else None


def scheduler_env(e):
    """The launcher's variables (RANK, WORLD_SIZE, LOCAL_RANK, ...) from a scheduler's, where the
    job was started without our launcher: Slurm's srun (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID,
    SLURM_NODEID; the master the first host of SLURM_JOB_NODELIST, its port 10000 + the job id's
    last four digits, unless MASTER_ADDR and MASTER_PORT are set), Open MPI's mpirun
    (OMPI_COMM_WORLD_*) and MPICH's or Intel MPI's (PMI_RANK, PMI_SIZE; MASTER_ADDR and
    MASTER_PORT are needed there). {} where RANK or WORLD_SIZE is set already (our launcher,
    torchrun, Kubernetes' PyTorchJob) or no scheduler is found."""
    if "RANK" in e or "WORLD_SIZE" in e:
        return {}
    out = {}

    def take(ours, theirs):  # checked here, so that an error names the scheduler's variable
        if theirs in e:
            out[ours] = str(_int(e, theirs, 0))

    if "SLURM_PROCID" in e and "SLURM_NTASKS" in e:
        if e.get("SLURM_JOB_NAME") in ("bash", "interactive"):
            return {}  # an interactive allocation's shell: one process
        take("RANK", "SLURM_PROCID")
        take("WORLD_SIZE", "SLURM_NTASKS")
        take("LOCAL_RANK", "SLURM_LOCALID")
        node = _int(e, "SLURM_NODEID", 0)
        out["NODE_RANK"] = str(node)
        local = e.get("SLURM_NTASKS_PER_NODE") or (
            _tasks_on_node(e["SLURM_TASKS_PER_NODE"], node) if "SLURM_TASKS_PER_NODE" in e else None
        )
        if local:
            out["LOCAL_WORLD_SIZE"] = str(local)
        if e.get("SLURM_NNODES") or e.get("SLURM_JOB_NUM_NODES"):
            out["GROUP_WORLD_SIZE"] = e.get("SLURM_NNODES") or e["SLURM_JOB_NUM_NODES"]
        if not e.get("MASTER_ADDR") and e.get("SLURM_JOB_NODELIST"):
            out["MASTER_ADDR"] = first_host(e["SLURM_JOB_NODELIST"])
        if not e.get("MASTER_PORT") and e.get("SLURM_JOB_ID", "").isdigit():
            out["MASTER_PORT"] = str(10000 + int(e["SLURM_JOB_ID"][-4:]))
    elif "OMPI_COMM_WORLD_RANK" in e and "OMPI_COMM_WORLD_SIZE" in e:
        for ours, theirs in (("RANK", "OMPI_COMM_WORLD_RANK"),
                             ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE"),
                             ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"),
                             ("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"),
                             ("NODE_RANK", "OMPI_COMM_WORLD_NODE_RANK")):  # fmt: skip
            take(ours, theirs)
    elif "PMI_RANK" in e and "PMI_SIZE" in e:
        take("RANK", "PMI_RANK")
        take("WORLD_SIZE", "PMI_SIZE")
        take("LOCAL_RANK", "MPI_LOCALRANKID")
        take("LOCAL_WORLD_SIZE", "MPI_LOCALNRANKS")
    return out


def read_env(environ=None):
    """A JobEnv from RANK, WORLD_SIZE, LOCAL_RANK, ... (or a scheduler's own: scheduler_env);
    unset means a single process."""
    e = os.environ if environ is None else environ
    e = {**e, **scheduler_env(e)}
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
            "python -m oneflowlike.distributed.launch, or set them (under mpirun)"
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
