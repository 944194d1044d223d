"""torch.nn.utils.rnn: PackedSequence and the pack / pad helpers.

Each conversion is one gather (index_select) with indices computed on the host from the
lengths, so it has autograd and costs one op whatever the number of sequences."""

from collections import namedtuple

import oneflowlike as flow

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpad_sequence",
    "pack_sequence",
    "unpack_sequence",
]

_PackedSequenceBase = namedtuple(
    "PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"]
)


class PackedSequence(_PackedSequenceBase):
    """Sequences of different lengths, time-major: step t holds batch_sizes[t] rows of data.

    Build it with pack_padded_sequence or pack_sequence; batch_sizes is an int64 CPU tensor."""

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PackedSequence((data, batch_sizes), ...)
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise TypeError(
                    "PackedSequence: expected data and batch_sizes, or a (data, batch_sizes) pair"
                )
            data, batch_sizes = data
        if batch_sizes.device.type != "cpu":
            raise ValueError(
                "PackedSequence: batch_sizes should always be on CPU; build packed sequences "
                "with pack_sequence or pack_padded_sequence"
            )
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self

        def move(t):
            return None if t is None else t.to(data.device)

        return type(self)(
            data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices)
        )

    def cuda(self, *args, **kwargs):
        return self.to("cuda", *args, **kwargs)

    def cpu(self, *args, **kwargs):
        return self.to("cpu", *args, **kwargs)

    def double(self):
        return self.to(dtype=flow.float64)

    def float(self):
        return self.to(dtype=flow.float32)

    def half(self):
        return self.to(dtype=flow.float16)

    def long(self):
        return self.to(dtype=flow.int64)

    def int(self):
        return self.to(dtype=flow.int32)

    @property
    def is_cuda(self):
        return self.data.device.type == "cuda"


def invert_permutation(permutation):
    """The permutation q with q[permutation[i]] = i (None stays None)."""
    if permutation is None:
        return None
    order = [int(i) for i in permutation.tolist()]
    inverse = [0] * len(order)
    for position, index in enumerate(order):
        inverse[index] = position
    return flow.tensor(inverse, dtype=flow.int64, device=permutation.device)


def _lengths_list(lengths, name):
    if isinstance(lengths, flow.Tensor):
        if lengths.dim() != 1:
            raise ValueError(f"{name}: lengths should be 1-D, got shape {tuple(lengths.shape)}")
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def _batch_sizes(lengths):
    """batch_sizes[t] = how many of the (decreasing) lengths exceed t."""
    sizes, count = [], len(lengths)
    for t in range(lengths[0] if lengths else 0):
        while count and lengths[count - 1] <= t:
            count -= 1
        sizes.append(count)
    return sizes


def _index(values, device):
    return flow.tensor(values, dtype=flow.int64, device=device)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Packs a padded batch (T, B, *) (or (B, T, *) with batch_first) of sequences."""
    lengths = _lengths_list(lengths, "pack_padded_sequence")
    if input.dim() < 2:
        raise ValueError(
            f"pack_padded_sequence: input should be at least 2-D, got shape {tuple(input.shape)}"
        )
    if batch_first:
        input = input.transpose(0, 1)
    steps, batch = input.shape[0], input.shape[1]
    if len(lengths) != batch:
        raise RuntimeError(
            f"pack_padded_sequence: Expected `len(lengths)` to be equal to batch_size, but got "
            f"{len(lengths)} (batch_size={batch})"
        )
    if any(length <= 0 for length in lengths):
        raise RuntimeError(
            "pack_padded_sequence: Length of all samples has to be greater than 0, but found an "
            f"element in 'lengths' that is <= 0: {lengths}"
        )
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise RuntimeError(
                "pack_padded_sequence: `lengths` array must be sorted in decreasing order when "
                "`enforce_sorted` is True. You can pass `enforce_sorted=False` to "
                "pack_padded_sequence and/or pack_sequence to sidestep this requirement if you "
                f"do not need ONNX exportability. Got lengths {lengths}"
            )
        order, sorted_indices = list(range(batch)), None
    else:
        order = sorted(range(batch), key=lambda i: -lengths[i])
        sorted_indices = _index(order, input.device)
    if lengths and max(lengths) > steps:
        raise RuntimeError(
            f"pack_padded_sequence: a length {max(lengths)} exceeds the padded length {steps}"
        )
    sorted_lengths = [lengths[i] for i in order]
    batch_sizes = _batch_sizes(sorted_lengths)
    rows = [t * batch + order[b] for t, size in enumerate(batch_sizes) for b in range(size)]
    flat = input.reshape(steps * batch, *tuple(input.shape[2:]))
    data = flow.index_select(flat, 0, _index(rows, input.device))
    return PackedSequence(data, flow.tensor(batch_sizes, dtype=flow.int64), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Inverse of pack_padded_sequence: returns (padded, lengths) in the original batch order."""
    batch_sizes = [int(v) for v in sequence.batch_sizes.tolist()]
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being {steps}"
            )
        steps = total_length
    data = sequence.data
    batch = batch_sizes[0]
    lengths = [sum(1 for size in batch_sizes if size > b) for b in range(batch)]
    unsorted = sequence.unsorted_indices
    # column j of the result holds sorted sequence perm[j]
    perm = list(range(batch)) if unsorted is None else [int(i) for i in unsorted.tolist()]
    offsets, offset = [], 0
    for size in batch_sizes:
        offsets.append(offset)
        offset += size
    pad_row = offset  # index of the appended padding row
    rows = []
    for t in range(steps):
        for j in range(batch):
            b = perm[j]
            rows.append(offsets[t] + b if t < len(batch_sizes) and b < batch_sizes[t] else pad_row)
    feature = tuple(data.shape[1:])
    pad = flow.full((1, *feature), padding_value, dtype=data.dtype, device=data.device)
    padded = flow.index_select(flow.cat([data, pad], 0), 0, _index(rows, data.device))
    padded = padded.reshape(steps, batch, *feature)
    if batch_first:
        padded = padded.transpose(0, 1)
    out_lengths = flow.tensor([lengths[b] for b in perm], dtype=flow.int64)
    return padded, out_lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stacks sequences (L_i, *) into (T, B, *) (or (B, T, *)), padding with padding_value."""
    if isinstance(sequences, flow.Tensor):
        sequences = list(sequences.unbind(0))
    if not isinstance(sequences, (list, tuple)):
        try:
            sequences = list(sequences)
        except TypeError:
            raise RuntimeError(
                "pad_sequence: Expected iterable for input sequences, but got arg of type: "
                f"{type(sequences)}"
            ) from None
    if padding_side not in ("left", "right"):
        raise ValueError(
            f"pad_sequence: Expected padding_side to be one of left or right, but got "
            f"{padding_side}."
        )
    if not sequences:
        raise RuntimeError("pad_sequence: received an empty list of sequences")
    feature = tuple(sequences[0].shape[1:])
    for i, seq in enumerate(sequences):
        if seq.dim() == 0 or tuple(seq.shape[1:]) != feature:
            raise RuntimeError(
                f"pad_sequence: sequence {i} has shape {tuple(seq.shape)}, expected "
                f"(*, {', '.join(map(str, feature))}) like sequence 0"
            )
    lengths = [int(seq.shape[0]) for seq in sequences]
    steps, batch = max(lengths), len(sequences)
    starts, start = [], 0
    for length in lengths:
        starts.append(start)
        start += length
    pad_row = start
    rows = []
    for t in range(steps):
        for b, length in enumerate(lengths):
            shift = steps - length if padding_side == "left" else 0
            i = t - shift
            rows.append(starts[b] + i if 0 <= i < length else pad_row)
    ref = sequences[0]
    pad = flow.full((1, *feature), padding_value, dtype=ref.dtype, device=ref.device)
    flat = flow.cat(list(sequences) + [pad], 0)
    padded = flow.index_select(flat, 0, _index(rows, ref.device)).reshape(steps, batch, *feature)
    return padded.transpose(0, 1) if batch_first else padded


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Splits a padded batch back into a list of sequences of the given lengths."""
    lengths = _lengths_list(lengths, "unpad_sequence")
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    if len(lengths) != padded_sequences.shape[0]:
        raise ValueError(
            f"unpad_sequence: {len(lengths)} lengths for a batch of {padded_sequences.shape[0]}"
        )
    return [seq.narrow(0, 0, length) for seq, length in zip(padded_sequences.unbind(0), lengths)]


def pack_sequence(sequences, enforce_sorted=True):
    """Packs a list of sequences (L_i, *)."""
    lengths = [int(seq.shape[0]) for seq in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """Inverse of pack_sequence: the list of sequences in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
