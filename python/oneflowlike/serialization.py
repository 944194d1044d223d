"""flow.save / flow.load in the safetensors format; no pickle.

A flat ``{str: Tensor}`` dict is stored as a plain safetensors file. Any other structure of
dicts, lists, tuples, tensors and JSON scalars (an optimizer state_dict, say) stores its tensors
under their "."-joined paths and the structure itself as JSON in ``__metadata__``.

Every tensor's CRC-32 goes in ``__metadata__["ofl.crc32"]`` (a JSON object: name -> 8 lowercase
hex digits, zlib.crc32 of "CODE:d0,d1,..." and then the tensor's bytes, CODE being the header's
dtype). flow.load reads files with core/safetensors.cpp (the reader of the C++ API), which checks
each tensor of a file that has them.
"""

import os

import oneflowlike as flow
from oneflowlike import _checkpoint, _safetensors

__all__ = ["save", "load"]


def save(obj, path, metadata=None):
    """Writes obj to path (or a binary file object); a failed save leaves the old file intact.

    With global tensors in obj, path is a folder of per-rank shards and an index, written by
    every rank together (a distributed checkpoint: oneflowlike/_checkpoint.py). An nn.Graph is
    exported as OneFlow exports one: graph.save(path), the compiled graph for the C++ API."""
    if isinstance(obj, flow.nn.Graph):
        if metadata:
            raise ValueError("flow.save: a graph saves without metadata")
        return obj.save(os.fspath(path))
    if _checkpoint.has_global(obj):
        if metadata or hasattr(path, "write"):
            raise ValueError(
                "flow.save: global tensors save to a folder of shards, without metadata"
            )
        return _checkpoint.save(obj, os.fspath(path))
    return _safetensors.save_file(obj, path, metadata)


def load(path, map_location=None, weights_only=None, like=None):
    """Reads what save() wrote (or any safetensors file, returned as a flat dict).

    A distributed checkpoint (a folder) loads resharded: each tensor that `like` (a structure
    as saved, e.g. model.state_dict()) holds as a global tensor at the same place comes back
    with its placement and SBP, this rank reading only the pieces its shard needs; the others
    come back whole, as local tensors."""
    if _checkpoint.is_checkpoint(path):
        return _checkpoint.load(os.fspath(path), like)
    return _safetensors.load_file(path, map_location)
