"""One safetensors file: a structure of tensors encoded into one file, written atomically, and
read back checked. The format is flow.save's (oneflowlike/serialization.py, which says it); the
distributed checkpoint's shards (oneflowlike/_checkpoint.py) and the compiled-graph exports
(nn/graph/_save.py) are such files and share the temporary files' naming.
"""

import json
import os
import re
import secrets
import socket
import struct
import zlib

import oneflowlike as flow

_CODE_OF_DTYPE = {
    "float32": "F32",
    "float64": "F64",
    "float16": "F16",
    "bfloat16": "BF16",
    "int8": "I8",
    "uint8": "U8",
    "int32": "I32",
    "int64": "I64",
    "bool": "BOOL",
}
_ITEMSIZE = {
    "F32": 4,
    "F64": 8,
    "F16": 2,
    "BF16": 2,
    "I8": 1,
    "U8": 1,
    "I32": 4,
    "I64": 8,
    "BOOL": 1,
}
_TREE_KEY = "oneflowlike.tree"
_CRC_KEY = "ofl.crc32"
_SCALARS = (str, int, float, bool, type(None))


# ---- structure <-> JSON tree ----------------------------------------------------------------


class Encoder:
    def __init__(self):
        self.tensors = {}

    def _name_for(self, path):
        base = ".".join(path) or "tensor"
        name, n = base, 1
        while name in self.tensors or name == "__metadata__":
            name, n = f"{base}~{n}", n + 1
        return name

    def encode(self, node, path):
        if isinstance(node, flow.Tensor):
            name = self._name_for(path)
            self.tensors[name] = node
            return {"__tensor__": name}
        if isinstance(node, dict):
            pairs = []
            for key, value in node.items():
                if not isinstance(key, _SCALARS):
                    raise TypeError(
                        f"flow.save: dict key {key!r} at '{'.'.join(path)}' is not a str/int/float/bool/None"
                    )
                pairs.append([key, self.encode(value, path + [str(key)])])
            return {"__dict__": pairs}
        if isinstance(node, (list, tuple)):
            items = [self.encode(v, path + [str(i)]) for i, v in enumerate(node)]
            return {"__tuple__": items} if isinstance(node, tuple) else items
        if isinstance(node, _SCALARS):
            return node
        raise TypeError(
            f"flow.save: cannot store a {type(node).__name__} at '{'.'.join(path)}'; "
            "only tensors, dicts, lists, tuples, str, int, float, bool and None are supported"
        )


def decode(node, tensors, where):
    if isinstance(node, list):
        return [decode(v, tensors, where) for v in node]
    if not isinstance(node, dict):
        return node
    if "__tensor__" in node:
        name = node["__tensor__"]
        if name not in tensors:
            raise ValueError(f"{where}: the structure refers to a missing tensor {name!r}")
        return tensors[name]
    if "__tuple__" in node:
        return tuple(decode(v, tensors, where) for v in node["__tuple__"])
    if "__dict__" in node:
        pairs = node["__dict__"]
        if not isinstance(pairs, list) or not all(
            isinstance(p, list) and len(p) == 2 for p in pairs
        ):
            raise ValueError(f"{where}: a stored dict is not a list of [key, value] pairs")
        return {key: decode(value, tensors, where) for key, value in pairs}
    raise ValueError(f"{where}: unrecognised structure node {sorted(node)}")


def _is_flat_state_dict(obj):
    return isinstance(obj, dict) and all(
        isinstance(k, str) and k != "__metadata__" and isinstance(v, flow.Tensor)
        for k, v in obj.items()
    )


# ---- save -----------------------------------------------------------------------------------


def _numel(shape):
    count = 1
    for size in shape:
        count *= size
    return count


def _tensor_crc(code, shape, data):
    """The checksum saved for a tensor: its dtype code and shape, then its bytes."""
    prefix = f"{code}:{','.join(str(d) for d in shape)}".encode()
    return f"{zlib.crc32(data, zlib.crc32(prefix)):08x}"


def _serialize(obj, metadata):
    metadata = {str(k): str(v) for k, v in (metadata or {}).items()}
    if _CRC_KEY in metadata:
        raise ValueError(f"flow.save: metadata key {_CRC_KEY!r} is reserved for the checksums")
    if _is_flat_state_dict(obj):
        tensors = dict(obj)
    else:
        encoder = Encoder()
        tree = encoder.encode(obj, [])
        tensors = encoder.tensors
        metadata[_TREE_KEY] = json.dumps(tree, separators=(",", ":"))
    header, sums = {"__metadata__": metadata}, {}
    chunks, offset = [], 0
    for name, tensor in tensors.items():
        dtype_name = tensor.dtype.name
        if dtype_name not in _CODE_OF_DTYPE:
            raise TypeError(f"flow.save: tensor '{name}' has unsupported dtype {dtype_name}")
        code = _CODE_OF_DTYPE[dtype_name]
        shape = [int(s) for s in tensor.shape]
        data = flow._C.tensor_bytes(tensor)
        expected = _numel(shape) * _ITEMSIZE[code]
        if len(data) != expected:
            raise RuntimeError(
                f"flow.save: tensor '{name}' {shape} {dtype_name} gave {len(data)} bytes, "
                f"expected {expected}"
            )
        header[name] = {"dtype": code, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        sums[name] = _tensor_crc(code, shape, data)
        chunks.append(data)
        offset += len(data)
    metadata[_CRC_KEY] = json.dumps(sums, separators=(",", ":"))
    header_bytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    header_bytes += b" " * (-len(header_bytes) % 8)  # data starts 8-byte aligned
    return [struct.pack("<Q", len(header_bytes)), header_bytes] + chunks


def save_file(obj, path, metadata=None):
    """Writes obj to path (or a binary file object) as one file; a failed save leaves the old
    file intact."""
    chunks = _serialize(obj, metadata)
    if hasattr(path, "write"):
        for chunk in chunks:
            path.write(chunk)
        return
    path = os.fspath(path)
    _remove_stale_temps(path)
    fd, tmp = _open_temp(path)
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


# A temporary file is named "." + target + ".<host>-<pid>-<random>.tmp": a later save of the
# target removes the ones whose writer is gone (this host, no such process), never a live one's.
HOST = f"{zlib.crc32(socket.gethostname().encode()):08x}"
TEMP = re.compile(r"([0-9a-f]{8})-([0-9]+)-[0-9a-f]{16}\.tmp")


def _open_temp(path):
    directory, base = os.path.split(os.path.abspath(path))
    while True:
        tmp = os.path.join(directory, f".{base}.{HOST}-{os.getpid()}-{secrets.token_hex(8)}.tmp")
        try:  # the umask applies to 0o666, as for any new file
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue


def _pid_alive(pid):
    """Whether process pid runs on this host (a zombie, killed but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def writer_gone(host, pid):
    """Whether the process that names its files by (host, pid) is known to be dead."""
    return host == HOST and not _pid_alive(int(pid))


def _remove_stale_temps(path):
    """Removes the temporary files of path that saves killed on this host left."""
    directory, base = os.path.split(os.path.abspath(path))
    prefix = f".{base}."
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        m = TEMP.fullmatch(name, len(prefix)) if name.startswith(prefix) else None
        if m and writer_gone(m[1], m[2]):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:  # gone already, or not ours to remove: the save goes on
                pass


# ---- load -----------------------------------------------------------------------------------


def _read(path=None, data=None, shown=None):
    """A file's (or bytes') tensors in file order and its __metadata__, read and checked
    (entries, bounds, bytes no tensor claims, checksums) by core/safetensors.cpp."""
    try:
        if data is not None:
            return flow._C.read_safetensors_bytes(data, shown)
        return flow._C.read_safetensors_file(path)  # a missing file: FileNotFoundError
    except flow._C.Error as ex:
        raise ValueError(str(ex)) from None


def load_file(path, map_location=None):
    """Reads one file that save_file wrote (or any safetensors file, returned as a flat dict)."""
    if hasattr(path, "read"):
        where = "flow.load(<file object>)"
        tensors, metadata = _read(data=bytes(path.read()), shown="<file object>")
    else:
        path = os.fspath(path)
        where = f"flow.load('{path}')"
        tensors, metadata = _read(path)
    if map_location is not None:
        tensors = {name: t.to(map_location) for name, t in tensors.items()}
    if _TREE_KEY not in metadata:
        return tensors
    try:
        tree = json.loads(metadata[_TREE_KEY])
    except json.JSONDecodeError as ex:
        raise ValueError(f"{where}: the stored structure is not valid JSON ({ex})") from None
    try:
        return decode(tree, tensors, where)
    except (TypeError, KeyError, AttributeError) as ex:
        raise ValueError(f"{where}: the stored structure is malformed ({ex})") from None
