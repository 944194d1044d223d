"""Character-level dataset: vocabulary, encode/decode, reproducible random batches."""

from pathlib import Path
from typing import Iterable, Tuple

import numpy as np

import oneflowlike as flow


class CharDataset:
    """Holds a text as token ids, split into a train and a validation part.

    Batches are random windows of block_size + 1 characters (input and next-character target),
    drawn from a numpy Generator seeded once, so a run with the same seed sees the same batches.
    """

    def __init__(self, text: str, block_size: int, val_fraction: float = 0.1, seed: int = 0):
        if not text:
            raise ValueError("CharDataset: the text is empty")
        self.chars = sorted(set(text))
        self.stoi = {ch: i for i, ch in enumerate(self.chars)}
        self.block_size = block_size
        self.seed = seed
        data = self.encode(text)
        n_train = int(len(data) * (1.0 - val_fraction))
        self.train_data, self.val_data = data[:n_train], data[n_train:]
        for name, part in (("train", self.train_data), ("val", self.val_data)):
            if len(part) <= block_size + 1:
                raise ValueError(
                    f"CharDataset: {name} split has {len(part)} characters, "
                    f"need more than block_size + 1 = {block_size + 1}"
                )
        self.rng = np.random.default_rng(seed)

    @classmethod
    def from_file(cls, path, block_size: int, **kwargs) -> "CharDataset":
        return cls(Path(path).read_text(encoding="utf-8"), block_size, **kwargs)

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def encode(self, s: str) -> np.ndarray:
        unknown = sorted(set(s) - self.stoi.keys())
        if unknown:
            raise ValueError(f"CharDataset.encode: characters not in the vocabulary: {unknown!r}")
        return np.fromiter((self.stoi[c] for c in s), dtype=np.int64, count=len(s))

    def decode(self, ids: Iterable[int]) -> str:
        return "".join(self.chars[int(i)] for i in ids)

    def get_batch(self, split: str = "train", batch_size: int = 32, rng=None) -> Tuple:
        """Returns (x, y), two (batch_size, block_size) int64 tensors; y is x shifted by one."""
        data = {"train": self.train_data, "val": self.val_data}[split]
        rng = self.rng if rng is None else rng
        starts = rng.integers(0, len(data) - self.block_size - 1, size=batch_size)
        window = starts[:, None] + np.arange(self.block_size + 1)[None, :]
        chunk = data[window]  # (batch_size, block_size + 1), a fresh contiguous array
        x = np.ascontiguousarray(chunk[:, :-1])
        y = np.ascontiguousarray(chunk[:, 1:])
        return flow.from_numpy(x), flow.from_numpy(y)
