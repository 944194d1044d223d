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

Loading checks everything before trusting it: index.json's shape and types, that each tensor's
pieces tile it exactly, each piece's dtype and shape against its shard file's entry, and the
checksum of each shard entry it reads."""

import json
import math
import os
import re
import secrets
import struct

import numpy as np

import oneflowlike as flow
from oneflowlike import serialization as _st

INDEX = "index.json"
FORMAT = "oneflowlike-checkpoint"
VERSION = 1
last_bytes_read = {}  # of the last load on this rank: shard file (without the save id) -> bytes
# numpy moves bytes: one unsigned type per item size (bfloat16 has no numpy type).
_RAW = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
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
    token = flow.tensor([secrets.randbits(62), int(_st._HOST, 16), os.getpid()], dtype=flow.int64)
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
    encoder = _st._Encoder()
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
    if host == _st._HOST and int(pid) == os.getpid():
        return True
    return _st._writer_gone(host, pid)


def _remove_ended_saves(path, keep, over=lambda token: False):
    """Removes the files of the saves (by token) not in keep that are over or have ended."""
    for name in os.listdir(path):
        token = _token_of(name)
        if token is not None and token not in keep and (over(token) or _ended(token)):
            try:
                os.unlink(os.path.join(path, name))
            except FileNotFoundError:
                pass


def _committed_tokens(path):
    """The tokens of the files index.json names (none without one); None if it is unreadable."""
    if not os.path.exists(os.path.join(path, INDEX)):
        return set()
    try:
        _, entries = _read_index(path)
    except (OSError, ValueError):
        return None
    return {_token_of(p["file"]) for _, _, pieces in entries.values() for p in pieces} - {None}


def _barrier():
    if _dist().get_world_size() > 1:
        _dist().barrier()


def _read_index(path):
    """index.json, checked: (the index, {tensor: (dtype name, shape, pieces)}). Raises
    ValueError naming it and what is wrong."""
    where = f"flow.load('{path}'): {INDEX}"
    with open(os.path.join(path, INDEX), "rb") as f:
        text = f.read()
    try:
        index = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as ex:
        raise ValueError(f"{where} is not JSON ({ex}; truncated or damaged?)") from None
    if not isinstance(index, dict):
        raise ValueError(f"{where} is not a JSON object but a {type(index).__name__}")
    if index.get("format") != FORMAT:
        raise ValueError(f"{where} is not a {FORMAT} index (format {index.get('format')!r})")
    if index.get("format_version") != VERSION:
        raise ValueError(
            f"{where}: checkpoint format version {index.get('format_version')!r}, this build "
            f"reads {VERSION}"
        )
    for key in ("tree", "tensors"):
        if key not in index:
            raise ValueError(f"{where} has no {key!r}")
    if not isinstance(index["tensors"], dict):
        raise ValueError(
            f"{where}: 'tensors' is a {type(index['tensors']).__name__}, not an object"
        )
    entries = {
        name: _check_tensor(entry, f"{where}: tensor '{name}'")
        for name, entry in index["tensors"].items()
    }
    return index, entries


def _is_size(v, limit=2**62):
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < limit


def _check_tensor(entry, where):
    if not isinstance(entry, dict) or not {"dtype", "shape", "pieces"} <= set(entry):
        raise ValueError(f"{where} is not an object with a dtype, a shape and pieces")
    dtype, shape, pieces = entry["dtype"], entry["shape"], entry["pieces"]
    if not isinstance(dtype, str) or dtype not in _st._CODE_OF_DTYPE:
        raise ValueError(f"{where} has an unsupported dtype {dtype!r}")
    if not isinstance(shape, list) or not all(_is_size(n) for n in shape):
        raise ValueError(f"{where} has an invalid shape {shape!r}")
    if not isinstance(pieces, list):
        raise ValueError(f"{where}: pieces is a {type(pieces).__name__}, not a list")
    for i, piece in enumerate(pieces):
        if not isinstance(piece, dict) or not {"file", "key", "ranges"} <= set(piece):
            raise ValueError(f"{where}: piece {i} is not an object with a file, a key and ranges")
        file, ranges = piece["file"], piece["ranges"]
        if not isinstance(file, str) or os.path.basename(file) != file or file in ("", ".", ".."):
            raise ValueError(f"{where}: piece {i} names {file!r}, not a file of the folder")
        if not isinstance(piece["key"], str):
            raise ValueError(f"{where}: piece {i} has a key {piece['key']!r}, not a string")
        if (
            not isinstance(ranges, list)
            or len(ranges) != len(shape)
            or not all(
                isinstance(r, list) and len(r) == 2 and all(_is_size(v, n + 1) for v in r)
                for r, n in zip(ranges, shape)
            )
            or any(b > e for b, e in ranges)
        ):
            raise ValueError(
                f"{where}: piece {i} has ranges {ranges!r}, not a [begin, end] per axis inside "
                f"the shape {shape}"
            )
    why = _tiling_error(shape, [p["ranges"] for p in pieces])
    if why:
        raise ValueError(f"{where}: {why}, so they do not tile it (the index is damaged)")
    return dtype, shape, pieces


def _tiling_error(shape, pieces):
    """Why pieces ([begin, end) per axis, inside shape) do not tile it exactly, or None: they
    must be disjoint, their volumes adding up to the whole."""
    total = sum(math.prod(e - b for b, e in ranges) for ranges in pieces)
    if total != math.prod(shape):
        return f"its pieces hold {total} elements, its shape {shape} has {math.prod(shape)}"
    boxes = [i for i, ranges in enumerate(pieces) if all(b < e for b, e in ranges)]
    if len(boxes) < 2 or not shape:
        return None
    lo = np.array([[b for b, _ in pieces[i]] for i in boxes], np.int64)
    hi = np.array([[e for _, e in pieces[i]] for i in boxes], np.int64)
    axis = max(range(len(shape)), key=lambda d: len(np.unique(lo[:, d])))
    order = np.argsort(lo[:, axis], kind="stable")
    lo, hi = lo[order], hi[order]
    for i in range(len(boxes)):  # only the boxes that start on `axis` before box i ends can meet it
        j = int(np.searchsorted(lo[:, axis], hi[i, axis], side="left"))
        meet = np.all((lo[i + 1 : j] < hi[i]) & (lo[i] < hi[i + 1 : j]), axis=1)
        if meet.any():
            a, b = sorted((boxes[order[i]], boxes[order[i + 1 + int(np.argmax(meet))]]))
            return f"pieces {a} and {b} overlap"
    return None


# ---- shard files ------------------------------------------------------------------------------
# Read here, mapped, rather than by core/safetensors.cpp (which flow.load of a file uses): a rank
# reads only the entries its shard overlaps, and the binding reads whole files. These go when
# oneflowlike._C binds the reader's `only` argument, or the checkpoint reader itself.

_MAX_HEADER_BYTES = 100 * 1024 * 1024  # as core/safetensors.cpp


def _parse_header(data, where):
    if len(data) < 8:
        raise ValueError(f"{where}: not a safetensors file ({len(data)} bytes, need at least 8)")
    (length,) = struct.unpack("<Q", data[:8])
    if length > min(len(data) - 8, _MAX_HEADER_BYTES):
        raise ValueError(
            f"{where}: header length {length} does not fit in a file of {len(data)} bytes "
            "(truncated or not a safetensors file)"
        )
    try:
        header = json.loads(bytes(data[8 : 8 + length]).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as ex:
        raise ValueError(f"{where}: header is not valid UTF-8 JSON ({ex})") from None
    if not isinstance(header, dict):
        raise ValueError(f"{where}: header must be a JSON object, got {type(header).__name__}")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise ValueError(f"{where}: __metadata__ must map strings to strings")
    return header, metadata, 8 + length


def _checksums(metadata, where):
    """The saved checksums by tensor name; None for a file without them (another writer's)."""
    if _st._CRC_KEY not in metadata:
        return None
    try:
        sums = json.loads(metadata[_st._CRC_KEY])
    except json.JSONDecodeError:
        sums = None
    if not isinstance(sums, dict) or not all(isinstance(v, str) for v in sums.values()):
        raise ValueError(
            f"{where}: __metadata__[{_st._CRC_KEY!r}] is not a JSON object of checksums "
            "(the file is damaged)"
        )
    return sums


def _verify(name, code, shape, data, sums, where):
    """Raises if a tensor's bytes (with its dtype and shape) fail the checksum saved for it."""
    if sums is None:
        return
    if name not in sums:
        raise ValueError(
            f"{where}: tensor '{name}' has no checksum in a file that carries them "
            "(the header is damaged)"
        )
    got = _st._tensor_crc(code, shape, data)
    if got != sums[name]:
        raise ValueError(
            f"{where}: checksum mismatch for tensor '{name}' ({code} {shape}): computed {got}, "
            f"saved {sums[name]}; the file is damaged"
        )


def _check_entry(name, entry, where):
    if not isinstance(entry, dict) or not {"dtype", "shape", "data_offsets"} <= set(entry):
        raise ValueError(f"{where}: tensor '{name}' needs dtype, shape and data_offsets")
    code, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if code not in _st._ITEMSIZE:
        raise ValueError(f"{where}: tensor '{name}' has unsupported dtype {code!r}")
    if not isinstance(shape, list) or not all(
        isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape
    ):
        raise ValueError(f"{where}: tensor '{name}' has an invalid shape {shape!r}")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
        or not 0 <= offsets[0] <= offsets[1]
    ):
        raise ValueError(f"{where}: tensor '{name}' has invalid data_offsets {offsets!r}")
    expected = math.prod(shape) * _st._ITEMSIZE[code]
    if offsets[1] - offsets[0] != expected:
        raise ValueError(
            f"{where}: tensor '{name}' {code} {shape} needs {expected} bytes, "
            f"data_offsets {offsets} span {offsets[1] - offsets[0]}"
        )
    return code, shape, offsets


class _Files:
    """The rank files of a checkpoint, mapped (not read) on first use, checked like flow.load:
    each entry's dtype and shape against index.json's, its checksum on its first read."""

    def __init__(self, path):
        self.path, self.open, self.read, self.verified = path, {}, {}, set()

    def piece(self, piece, dtype, itemsize):
        name = piece["file"]
        where = f"flow.load('{os.path.join(self.path, name)}')"
        if name not in self.open:
            file = os.path.join(self.path, name)
            if not os.path.isfile(file):
                raise FileNotFoundError(f"{where}: the checkpoint's shard file is missing")
            data = np.memmap(file, np.uint8, "r") if os.path.getsize(file) else np.zeros(0)
            header, metadata, start = _parse_header(memoryview(data), where)
            entries = {k: _check_entry(k, e, where) for k, e in header.items()}
            end = max((e[2][1] for e in entries.values()), default=0)
            if start + end > len(data):
                raise ValueError(
                    f"{where}: truncated: the tensors need {start + end} bytes, the file has "
                    f"{len(data)}"
                )
            self.open[name] = (data, entries, start, _checksums(metadata, where))
        data, entries, start, sums = self.open[name]
        key = piece["key"]
        if key not in entries:
            raise ValueError(f"{where}: has no tensor '{key}' that index.json names")
        code, shape, (begin, end) = entries[key]
        want_code, want = _st._CODE_OF_DTYPE[dtype], [e - b for b, e in piece["ranges"]]
        if shape != want or code != want_code:
            raise ValueError(
                f"{where}: tensor '{key}' is {code} {shape}, index.json says {want_code} "
                f"({dtype}) {want}"
            )
        raw = data[start + begin : start + end]
        if (name, key) not in self.verified:  # the whole entry: its checksum covers no less
            _verify(key, code, shape, raw, sums, where)
            self.verified.add((name, key))
        return raw.view(_RAW[itemsize]).reshape(shape)

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
    index, entries = _read_index(path)
    targets = {}
    if like is not None:
        encoder = _st._Encoder()
        encoder.encode(like, [])
        targets = encoder.tensors
    files, tensors = _Files(path), {}
    rank = _dist().get_rank()
    for name, (dtype_name, shape, pieces) in entries.items():
        dtype = getattr(flow, dtype_name)
        itemsize = _st._ITEMSIZE[_st._CODE_OF_DTYPE[dtype_name]]
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
                _fill(local, region, pieces, files, dtype_name, itemsize, name, where)
            t = flow._C.tensor_from_bytes(local.tobytes(), dtype, list(local.shape))
            if target.placement.type != "cpu":  # the shard where the placement keeps it
                t = t.to(flow._global.shard_device(target.placement))
            tensors[name] = flow._C.make_global(
                t, target.placement, flow._C.NdSbp(sbp), _dist().world(), False, False
            )  # each rank read its own shard of the same logical tensor
        else:
            full = np.zeros(shape, _RAW[itemsize])
            region = [[0, n] for n in shape]
            _fill(full, region, pieces, files, dtype_name, itemsize, name, where)
            tensors[name] = flow._C.tensor_from_bytes(full.tobytes(), dtype, shape)
    global last_bytes_read
    last_bytes_read = {name.split(".")[0]: n for name, n in files.read.items()}
    try:
        return _st._decode(index["tree"], tensors, f"{where}: {INDEX}")
    except (TypeError, KeyError, AttributeError) as ex:
        raise ValueError(f"{where}: {INDEX}: the stored structure is malformed ({ex})") from None


def _zero_partial(placement, sbp, rank):
    """A partial-sum target holds the value on coordinate 0 of its partial axes, zeros elsewhere."""
    i = list(placement.flat_ranks).index(rank)
    coords = np.unravel_index(i, list(placement.mesh))
    return any(c != 0 for c, s in zip(coords, sbp) if s.is_partial())
