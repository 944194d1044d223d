"""Distributed checkpoints: flow.save of a structure holding global tensors writes a folder, and
flow.load reads it back into any placement, SBP or world size.

The folder holds one safetensors file per rank with the pieces of the logical tensors that rank
holds (each piece once: of ranks holding the same data, the first writes it; partial sums are
reduced first) and index.json: the structure, and for each logical tensor its dtype, shape and
where each piece lies ([begin, end) per axis, file and key). Loading a tensor with a global
tensor to match (`like`) reads, on each rank, only the pieces that overlap that rank's shard;
without one, the whole logical tensor.

Atomic: shards go to new files named by the save, and index.json, written aside and renamed over
the old one, is the commit; only then are the files of the previous save removed. A save killed
at any point leaves the previous checkpoint loadable; the next save removes what it left.

Loading is global/checkpoint.h's Reader (the C++ API's too), which checks everything before
trusting it: index.json's shape and types, that each tensor's pieces tile it exactly, each
piece's dtype and shape against its shard file's entry, and the checksum of each shard entry it
reads. Here the shards become global tensors and the saved structure is rebuilt."""

import json
import os
import re
import secrets

import numpy as np

import oneflowlike as flow
from oneflowlike import _safetensors as _st

INDEX = "index.json"
FORMAT = "oneflowlike-checkpoint"
VERSION = 1
last_bytes_read = {}  # of the last load on this rank: shard file (without the save id) -> bytes
# A save's files are named by its token, "<random>-<host>-<pid>" of the rank 0 process that
# commits it ("<random>" before): the shards, their temporaries (serialization.save's) and the
# index written aside. A save whose rank 0 is dead can never commit: its files are garbage.
_TOKEN = r"[0-9a-f]{16}(?:-[0-9a-f]{8}-[0-9]+)?"
_FILE = re.compile(
    rf"shard-[0-9]+-of-[0-9]+\.({_TOKEN})\.safetensors"
    rf"|\.shard-[0-9]+-of-[0-9]+\.({_TOKEN})\.safetensors\..+\.tmp"
    rf"|\.{re.escape(INDEX)}\.({_TOKEN})\.tmp"
)
_saving = set()  # the tokens of the saves this process is in


def has_global(obj):
    if isinstance(obj, flow.Tensor):
        return obj.is_global
    if isinstance(obj, dict):
        return any(has_global(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return any(has_global(v) for v in obj)
    return False


def is_checkpoint(path):
    return isinstance(path, (str, os.PathLike)) and os.path.isfile(os.path.join(path, INDEX))


def _dist():
    return flow.distributed


def _save_token():
    """A name for this save's files, the same on every rank (rank 0's, broadcast)."""
    token = flow.tensor([secrets.randbits(62), int(_st.HOST, 16), os.getpid()], dtype=flow.int64)
    if _dist().get_world_size() > 1:
        _dist().broadcast(token, src=0)
    rand, host, pid = (int(v) for v in token.numpy())
    return f"{rand:016x}-{host:08x}-{pid}"


def _ranges(shape, placement, sbp, rank):
    return flow._C.local_ranges(list(shape), placement, flow._C.NdSbp(list(sbp)), rank)


def _writer_ranks(placement, sbp):
    """Of the ranks holding each piece, the one at coordinate 0 of every broadcast mesh axis."""
    mesh = list(placement.mesh)
    for i, rank in enumerate(placement.flat_ranks):
        coords = np.unravel_index(i, mesh)
        if all(c == 0 for c, s in zip(coords, sbp) if s.is_broadcast()):
            yield rank


def save(obj, path):
    """Every rank calls it (it is collective)."""
    token = _save_token()
    _saving.add(token)
    try:
        _save(obj, path, token)
    finally:
        _saving.discard(token)


def _save(obj, path, token):
    encoder = _st.Encoder()
    tree = encoder.encode(obj, [])
    rank, world = _dist().get_rank(), _dist().get_world_size()
    os.makedirs(path, exist_ok=True)
    if rank == 0:
        committed = _committed_tokens(path)
        if committed is not None:  # else what is committed is unknown: leave every file
            _remove_ended_saves(path, keep=committed | {token})

    def file_of(r):
        return f"shard-{r:05d}-of-{world:05d}.{token}.safetensors"

    mine, entries = {}, {}
    for name, t in encoder.tensors.items():
        shape = [int(s) for s in t.shape]
        pieces = []
        if t.is_global:
            sbp = list(t.sbp)
            if any(s.is_partial() for s in sbp):  # sums are saved reduced
                sbp = [flow.sbp.broadcast if s.is_partial() else s for s in sbp]
                t = t.to_global(sbp=sbp)
            for r in _writer_ranks(t.placement, sbp):
                ranges = _ranges(shape, t.placement, sbp, r)
                if all(b < e for b, e in ranges):
                    pieces.append({"file": file_of(r), "key": name, "ranges": ranges})
                    if r == rank:
                        mine[name] = t.to_local()
        else:  # a local tensor: rank 0's (the same on every rank, as a step count)
            pieces.append({"file": file_of(0), "key": name, "ranges": [[0, n] for n in shape]})
            if rank == 0:
                mine[name] = t
        entries[name] = {"dtype": t.dtype.name, "shape": shape, "pieces": pieces}
    _st.save_file({k: v.contiguous() for k, v in mine.items()}, os.path.join(path, file_of(rank)))
    _barrier()
    if rank == 0:
        index = {"format": FORMAT, "format_version": VERSION, "world_size": world}
        index.update(tree=tree, tensors=entries)
        tmp = os.path.join(path, f".{INDEX}.{token}.tmp")
        with open(tmp, "w") as f:
            json.dump(index, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        before = _committed_tokens(path) or set()
        os.replace(tmp, os.path.join(path, INDEX))  # the commit
        # The save it replaced, and those from before tokens named their writer, are over too.
        _remove_ended_saves(path, keep={token}, over=lambda t: t in before or "-" not in t)
    _barrier()


def _token_of(name):
    m = _FILE.fullmatch(name)
    return next(t for t in m.groups() if t) if m else None


def _ended(token):
    """Whether the save named token can no longer commit: its rank 0 ran on this host and is
    gone, or is this process, which is in no such save now."""
    if token in _saving or "-" not in token:
        return False
    _, host, pid = token.split("-")
    if host == _st.HOST and int(pid) == os.getpid():
        return True
    return _st.writer_gone(host, pid)


def _writer_gone(name):
    """Whether name is a shard's temporary (serialization.save's ".<shard>.<host>-<pid>-<random>
    .tmp") whose writer is known to be dead: only that process could ever rename it, whether or
    not the rank 0 that names its save still runs (a rank killed mid-write while rank 0 waits
    at the barrier, or is itself still being stopped)."""
    if name.startswith(f".{INDEX}.") or ".safetensors." not in name:
        return False  # index.json's temporary is rank 0's own: _ended judges it
    m = _st.TEMP.fullmatch(name.rsplit(".safetensors.", 1)[1])
    return m is not None and _st.writer_gone(m[1], m[2])


def _remove_ended_saves(path, keep, over=lambda token: False):
    """Removes the files of the saves (by token) not in keep that are over or have ended, and
    the temporaries of those saves whose own writer is gone."""
    for name in os.listdir(path):
        token = _token_of(name)
        if (
            token is not None
            and token not in keep
            and (over(token) or _ended(token) or _writer_gone(name))
        ):
            try:
                os.unlink(os.path.join(path, name))
            except FileNotFoundError:
                pass


def _committed_tokens(path):
    """The tokens of the files index.json names (none without one); None if it is unreadable."""
    if not os.path.exists(os.path.join(path, INDEX)):
        return set()
    try:
        files = flow._C.CheckpointReader(path).files()
    except (OSError, flow._C.Error):
        return None
    return {_token_of(file) for file in files} - {None}


def _barrier():
    if _dist().get_world_size() > 1:
        _dist().barrier()


def _reader(path):
    """The checkpoint reader of global/checkpoint.h over path, which checks all of index.json
    (each tensor's pieces must tile it) before anything is read."""
    try:
        return flow._C.CheckpointReader(path)
    except flow._C.Error as ex:
        raise ValueError(str(ex)) from None


def load(path, like=None):
    """The saved structure, each tensor as this rank's shard of `like`'s global tensor at the same
    place (in its placement and SBP), else whole; global/checkpoint.h reads and checks it all."""
    where = f"flow.load('{path}')"
    reader = _reader(path)
    targets = {}
    if like is not None:
        encoder = _st.Encoder()
        encoder.encode(like, [])
        targets = encoder.tensors
    tensors = {}
    rank = _dist().get_rank()
    try:
        for name, shape, dtype in reader.tensors():
            target = targets.get(name)
            if target is None or not target.is_global:
                tensors[name] = reader.read(name, list(shape), dtype)
                continue
            if tuple(target.shape) != shape:
                raise ValueError(
                    f"{where}: '{name}' is {shape} in the checkpoint but "
                    f"{tuple(target.shape)} where it is loaded"
                )
            placement, sbp = target.placement, flow._C.NdSbp(list(target.sbp))
            coords = placement.coords_of(rank)
            if coords is None:  # this rank holds none of it
                t = flow._C.from_numpy(np.zeros((), np.float32)).to(dtype)
            else:
                t = reader.read(name, list(shape), dtype, placement, sbp, list(coords))
            if placement.type != "cpu":  # the shard where the placement keeps it
                t = t.to(flow._global.shard_device(placement))
            tensors[name] = flow._C.make_global(
                t, placement, sbp, _dist().world(), False, False
            )  # each rank read its own shard of the same logical tensor
    except flow._C.Error as ex:
        raise ValueError(str(ex)) from None
    global last_bytes_read
    last_bytes_read = {name.split(".")[0]: n for name, n in reader.bytes_read().items()}
    try:
        return _st.decode(json.loads(reader.tree()), tensors, f"{where}: {INDEX}")
    except (TypeError, KeyError, AttributeError) as ex:
        raise ValueError(f"{where}: {INDEX}: the stored structure is malformed ({ex})") from None
