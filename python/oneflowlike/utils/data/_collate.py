"""Batching samples. `default_collate` stacks like torch's; it runs in two halves so that workers
need no framework op: `collate_numpy` (numpy only, safe in a worker) stacks every leaf into a numpy
array, and `to_flow` turns those arrays into flow tensors, sharing their memory, in the process
that consumes the batch."""

import collections.abc

import numpy as np

import oneflowlike as flow

__all__ = ["default_collate", "default_convert"]


def _as_array(x):
    """A sample's tensor or array as numpy: a view of a local CPU tensor's memory (no op)."""
    if isinstance(x, flow.Tensor):
        if x.is_global or x.device.type != "cpu":
            raise TypeError(
                f"[default_collate] samples hold a {'global' if x.is_global else x.device} "
                "tensor; datasets should return local CPU tensors or numpy arrays (move batches "
                "to the device after loading)"
            )
        return x.detach().numpy() if x.requires_grad else x.numpy()
    return x


def _stack(arrays):
    shapes = [a.shape for a in arrays]
    for i, s in enumerate(shapes):
        if s != shapes[0]:
            raise RuntimeError(
                f"[default_collate] cannot stack samples of different shapes: {shapes[0]} at "
                f"entry 0 and {s} at entry {i} (pad them to one shape, or pass a collate_fn)"
            )
    if arrays[0].dtype.kind in "USOV":
        raise TypeError(
            f"[default_collate] cannot batch numpy arrays of dtype {arrays[0].dtype}: only "
            "numbers and booleans make tensors"
        )
    return np.stack(arrays)


def collate_numpy(batch):
    """default_collate's structure with numpy arrays where it puts tensors."""
    elem = batch[0]
    if isinstance(elem, (flow.Tensor, np.ndarray)):
        return _stack([_as_array(x) for x in batch])
    if isinstance(elem, np.generic) and elem.dtype.kind not in "USOV":
        return np.array(batch)
    if isinstance(elem, bool):
        return np.array(batch, dtype=np.bool_)
    if isinstance(elem, float):
        return np.array(batch, dtype=np.float64)
    if isinstance(elem, int):
        return np.array(batch, dtype=np.int64)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        for i, sample in enumerate(batch):
            if sample.keys() != elem.keys():
                raise KeyError(
                    f"[default_collate] sample {i} has keys {sorted(map(str, sample))}, but "
                    f"sample 0 has {sorted(map(str, elem))}"
                )
        out = {k: collate_numpy([d[k] for d in batch]) for k in elem}
        try:
            return out if type(elem) is dict else type(elem)(out)
        except TypeError:
            return out
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(collate_numpy(s) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        for i, sample in enumerate(batch):
            if len(sample) != len(elem):
                raise RuntimeError(
                    f"[default_collate] sample {i} has {len(sample)} fields but sample 0 has "
                    f"{len(elem)}: each sample must have the same number"
                )
        return [collate_numpy(s) for s in zip(*batch)]  # tuples become lists, as in torch
    raise TypeError(
        "[default_collate] samples must be tensors, numpy arrays, numbers, strings, dicts, "
        f"lists or tuples; got {type(elem).__name__}"
    )


def convert_numpy(data):
    """default_convert's structure with numpy arrays where it puts tensors (no batching)."""
    if isinstance(data, flow.Tensor):
        return _as_array(data)
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        out = {k: convert_numpy(v) for k, v in data.items()}
        try:
            return out if type(data) is dict else type(data)(out)
        except TypeError:
            return out
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(convert_numpy(d) for d in data))
    if isinstance(data, tuple):
        return [convert_numpy(d) for d in data]
    if isinstance(data, collections.abc.Sequence):
        try:
            return type(data)([convert_numpy(d) for d in data])
        except TypeError:
            return [convert_numpy(d) for d in data]
    return data


def to_flow(data):
    """Every numpy array in `data` (not numpy strings) as a flow tensor sharing its memory."""
    if isinstance(data, np.ndarray):
        if data.dtype.kind in "USOV":
            return data
        return flow.from_numpy(data if data.flags.writeable else data.copy())
    if isinstance(data, np.generic) and data.dtype.kind not in "USOV":
        return flow.from_numpy(np.array(data))
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        out = {k: to_flow(v) for k, v in data.items()}
        try:
            return out if type(data) is dict else type(data)(out)
        except TypeError:
            return out
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(to_flow(d) for d in data))
    if isinstance(data, (list, tuple)):
        return type(data)(to_flow(d) for d in data)
    return data


def default_collate(batch):
    """A list of samples as one batch, as torch's default_collate: tensors, numpy arrays and
    numbers become flow tensors stacked on a new first dimension (Python floats float64, ints
    int64, bools bool); dicts, namedtuples and lists keep their structure with each field
    collated; tuples become lists; strings stay as given. Samples must have equal shapes."""
    return to_flow(collate_numpy(batch))


def default_convert(data):
    """What the DataLoader does to each sample with batch_size=None: numpy arrays and numbers in
    numpy types become flow tensors, through dicts, lists and namedtuples; nothing is batched."""
    return to_flow(convert_numpy(data))
