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
at any point leaves the previous checkpoint loadable."""

import json
import os
import secrets

import numpy as np

import oneflowlike as flow
from oneflowlike import serialization as _st

INDEX = "index.json"
FORMAT = "oneflowlike-checkpoint"
VERSION = 1
last_bytes_read = {}  # of the last load on this rank: shard file (without the save id) -> bytes
# numpy moves bytes: one unsigned type per item size (bfloat16 has no numpy type).
_RAW = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


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
    token = flow.tensor([secrets.randbits(62)], dtype=flow.int64)
    if _dist().get_world_size() > 1:
        _dist().broadcast(token, src=0)
    return f"{int(token.item()):016x}"


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
    encoder = _st._Encoder()
    tree = encoder.encode(obj, [])
    rank, world = _dist().get_rank(), _dist().get_world_size()
    token = _save_token()
    os.makedirs(path, exist_ok=True)

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
    _st.save({k: v.contiguous() for k, v in mine.items()}, os.path.join(path, file_of(rank)))
    _barrier()
    if rank == 0:
        index = {"format": FORMAT, "format_version": VERSION, "world_size": world}
        index.update(tree=tree, tensors=entries)
        tmp = os.path.join(path, f".{INDEX}.{token}.tmp")
        with open(tmp, "w") as f:
            json.dump(index, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, os.path.join(path, INDEX))  # the commit
        keep = {INDEX} | {file_of(r) for r in range(world)}
        for f in os.listdir(path):
            if f not in keep and (f.startswith("shard-") or f.startswith(f".{INDEX}.")):
                os.unlink(os.path.join(path, f))
    _barrier()


def _barrier():
    if _dist().get_world_size() > 1:
        _dist().barrier()


class _Files:
    """The rank files of a checkpoint, mapped (not read) on first use, checked like flow.load."""

    def __init__(self, path):
        self.path, self.open, self.read = path, {}, {}

    def piece(self, piece, dtype, itemsize):
        name = piece["file"]
        where = f"flow.load('{os.path.join(self.path, name)}')"
        if name not in self.open:
            file = os.path.join(self.path, name)
            if os.path.basename(name) != name or not os.path.isfile(file):
                raise FileNotFoundError(f"{where}: the checkpoint's shard file is missing")
            data = np.memmap(file, np.uint8, "r") if os.path.getsize(file) else np.zeros(0)
            header, _, start = _st._parse_header(memoryview(data), where)
            entries = {k: _st._check_entry(k, e, where) for k, e in header.items()}
            end = max((e[2][1] for e in entries.values()), default=0)
            if start + end > len(data):
                raise ValueError(
                    f"{where}: truncated: the tensors need {start + end} bytes, the file has "
                    f"{len(data)}"
                )
            self.open[name] = (data, entries, start)
        data, entries, start = self.open[name]
        key = piece["key"]
        if key not in entries:
            raise ValueError(f"{where}: has no tensor '{key}' that index.json names")
        code, shape, (begin, end) = entries[key]
        want = [e - b for b, e in piece["ranges"]]
        if shape != want or _st._ITEMSIZE[code] != itemsize:
            raise ValueError(
                f"{where}: tensor '{key}' is {code} {shape}, index.json says {dtype} {want}"
            )
        return data[start + begin : start + end].view(_RAW[itemsize]).reshape(shape)

    def count(self, piece, nbytes):
        self.read[piece["file"]] = self.read.get(piece["file"], 0) + nbytes


def _fill(out, region, pieces, files, dtype, itemsize, name, where):
    """Copies into `out` (the region [begin, end) per axis) every overlapping piece."""
    covered = 0
    for piece in pieces:
        lo = [max(b, pb) for (b, _), (pb, _) in zip(region, piece["ranges"])]
        hi = [min(e, pe) for (_, e), (_, pe) in zip(region, piece["ranges"])]
        if any(a >= b for a, b in zip(lo, hi)):
            continue
        src = files.piece(piece, dtype, itemsize)
        dst_idx = tuple(slice(a - b, c - b) for a, c, (b, _) in zip(lo, hi, region))
        src_idx = tuple(slice(a - b, c - b) for a, c, (b, _) in zip(lo, hi, piece["ranges"]))
        out[dst_idx] = src[src_idx]
        n = int(np.prod([c - a for a, c in zip(lo, hi)]))
        files.count(piece, n * itemsize)
        covered += n
    if covered != out.size:
        raise ValueError(
            f"{where}: the pieces of '{name}' cover {covered} of the {out.size} elements this "
            "rank needs (a shard file of the save is missing or the index is damaged)"
        )


def load(path, like=None):
    where = f"flow.load('{path}')"
    try:
        with open(os.path.join(path, INDEX)) as f:
            index = json.load(f)
    except json.JSONDecodeError as ex:
        raise ValueError(f"{where}: index.json is not JSON ({ex})") from None
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        raise ValueError(f"{where}: index.json is not a {FORMAT} index")
    if index.get("format_version") != VERSION:
        raise ValueError(
            f"{where}: checkpoint format version {index.get('format_version')}, this build "
            f"reads {VERSION}"
        )
    targets = {}
    if like is not None:
        encoder = _st._Encoder()
        encoder.encode(like, [])
        targets = encoder.tensors
    files, tensors = _Files(path), {}
    rank = _dist().get_rank()
    for name, entry in index["tensors"].items():
        dtype = getattr(flow, entry["dtype"])
        itemsize = _st._ITEMSIZE[_st._CODE_OF_DTYPE[entry["dtype"]]]
        shape = entry["shape"]
        target = targets.get(name)
        if target is not None and target.is_global:
            if list(target.shape) != shape:
                raise ValueError(
                    f"{where}: '{name}' is {tuple(shape)} in the checkpoint but "
                    f"{tuple(target.shape)} where it is loaded"
                )
            sbp = list(target.sbp)
            region = _ranges(shape, target.placement, sbp, rank)
            local = np.zeros([e - b for b, e in region or []], _RAW[itemsize])
            if region is not None and not _zero_partial(target.placement, sbp, rank):
                _fill(local, region, entry["pieces"], files, entry["dtype"], itemsize, name, where)
            t = flow._C.tensor_from_bytes(local.tobytes(), dtype, list(local.shape))
            if target.placement.type != "cpu":  # the shard where the placement keeps it
                t = t.to(flow._global.shard_device(target.placement))
            tensors[name] = flow._C.make_global(
                t, target.placement, flow._C.NdSbp(sbp), _dist().world(), False
            )
        else:
            full = np.zeros(shape, _RAW[itemsize])
            _fill(
                full,
                [[0, n] for n in shape],
                entry["pieces"],
                files,
                entry["dtype"],
                itemsize,
                name,
                where,
            )
            tensors[name] = flow._C.tensor_from_bytes(full.tobytes(), dtype, shape)
    global last_bytes_read
    last_bytes_read = {name.split(".")[0]: n for name, n in files.read.items()}
    return _st._decode(index["tree"], tensors, where)


def _zero_partial(placement, sbp, rank):
    """A partial-sum target holds the value on coordinate 0 of its partial axes, zeros elsewhere."""
    i = list(placement.flat_ranks).index(rank)
    coords = np.unravel_index(i, list(placement.mesh))
    return any(c != 0 for c, s in zip(coords, sbp) if s.is_partial())
