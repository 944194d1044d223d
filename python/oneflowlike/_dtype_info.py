"""A dtype's numeric limits, as torch.finfo and torch.iinfo."""

import numpy as np

from . import _C


class finfo:
    """A floating dtype's limits, as torch.finfo: bits, eps, max, min, tiny (smallest_normal),
    resolution."""

    _BF16 = dict(bits=16, eps=0.0078125, max=3.3895313892515355e38, tiny=1.1754943508222875e-38,
                 resolution=0.01)  # fmt: skip

    def __init__(self, type=None):
        type = type if type is not None else _C.dtype.float32
        if type == _C.dtype.bfloat16:
            info = self._BF16
        elif type in (_C.dtype.float16, _C.dtype.float32, _C.dtype.float64):
            f = np.finfo(
                {_C.dtype.float16: np.float16, _C.dtype.float32: np.float32}.get(type, np.float64)
            )
            info = dict(bits=f.bits, eps=float(f.eps), max=float(f.max),
                        tiny=float(f.smallest_normal), resolution=10.0**-f.precision)  # fmt: skip
        else:
            raise TypeError(f"[finfo] {type!r} is not a floating dtype (iinfo is for integers)")
        self.dtype = repr(type).split(".")[-1]
        self.bits, self.eps, self.max, self.tiny = (
            info["bits"],
            info["eps"],
            info["max"],
            info["tiny"],
        )
        self.min, self.smallest_normal, self.resolution = -self.max, self.tiny, info["resolution"]

    def __repr__(self):
        return f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, eps={self.eps}, tiny={self.tiny}, dtype={self.dtype})"


class iinfo:
    """An integer dtype's limits, as torch.iinfo: bits, min, max."""

    def __init__(self, type):
        kinds = {_C.dtype.uint8: np.uint8, _C.dtype.int8: np.int8, _C.dtype.int32: np.int32,
                 _C.dtype.int64: np.int64, _C.dtype.bool: np.uint8}  # fmt: skip
        if type not in kinds:
            raise TypeError(f"[iinfo] {type!r} is not an integer dtype (finfo is for floats)")
        i = np.iinfo(kinds[type])
        self.bits, self.min, self.max = int(i.bits), int(i.min), int(i.max)
        if type == _C.dtype.bool:
            self.bits, self.max = 8, 1
        self.dtype = repr(type).split(".")[-1]

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
