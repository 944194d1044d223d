"""Convolutions: Conv1d/2d/3d and ConvTranspose1d/2d/3d, with PyTorch's arguments, attributes,
state_dict keys (weight, bias), initialisation and extra_repr."""

__all__ = [
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
]

import math

from .. import functional as F
from .. import init
from ..functional.padding import _ntuple
from ..module import Module
from ..parameter import Parameter
from . import _factory

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    """What the convolutions share: arguments, parameters and their initialisation."""

    _nd = 2

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
        bias,
        padding_mode,
        device=None,
        dtype=None,
    ):
        super().__init__()
        name, nd = type(self).__name__, self._nd
        if groups <= 0:
            raise ValueError(f"[{name}] groups must be a positive integer, got {groups}")
        if in_channels % groups:
            raise ValueError(
                f"[{name}] in_channels {in_channels} must be divisible by groups {groups}"
            )
        if out_channels % groups:
            raise ValueError(
                f"[{name}] out_channels {out_channels} must be divisible by groups {groups}"
            )
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(
                    f"[{name}] invalid padding string {padding!r}, should be one of "
                    f"{{'valid', 'same'}}"
                )
            if padding == "same" and any(s != 1 for s in _ntuple(stride, nd, "stride", name)):
                raise ValueError(
                    f"[{name}] padding='same' is not supported for strided convolutions"
                )
        if padding_mode not in _PADDING_MODES:
            raise ValueError(
                f"[{name}] padding_mode must be one of {_PADDING_MODES}, but got "
                f"padding_mode='{padding_mode}'"
            )
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(kernel_size, nd, "kernel_size", name)
        self.stride = _ntuple(stride, nd, "stride", name)
        self.padding = (
            padding if isinstance(padding, str) else _ntuple(padding, nd, "padding", name)
        )
        self.dilation = _ntuple(dilation, nd, "dilation", name)
        self.transposed = transposed
        self.output_padding = _ntuple(output_padding, nd, "output_padding", name)
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad amounts (last dimension first) for the non-zeros padding modes
        if isinstance(self.padding, str):
            amounts = []
            if padding == "same":
                for d, k in zip(reversed(self.dilation), reversed(self.kernel_size)):
                    total = d * (k - 1)
                    amounts += [total // 2, total - total // 2]
            else:
                amounts = [0, 0] * nd
            self._reversed_padding_repeated_twice = amounts
        else:
            self._reversed_padding_repeated_twice = [
                p for p in reversed(self.padding) for _ in (0, 1)
            ]
        if transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(_factory.empty(*shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(_factory.empty(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        nd = self._nd
        text = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * nd:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * nd:
            text += f", dilation={self.dilation}"
        if self.output_padding != (0,) * nd:
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


_CONV_FN = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


class _Conv(_ConvNd):
    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups,
            bias, padding_mode, device, dtype,
        )  # fmt: skip

    def _conv_forward(self, input, weight, bias):
        conv = _CONV_FN[self._nd]
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-d convolution over (N, C_in, L); weight (C_out, C_in / groups, k)."""

    _nd = 1


class Conv2d(_Conv):
    """2-d convolution over (N, C_in, H, W); weight (C_out, C_in / groups, kH, kW)."""

    _nd = 2


class Conv3d(_Conv):
    """3-d convolution over (N, C_in, D, H, W); weight (C_out, C_in / groups, kD, kH, kW)."""

    _nd = 3


_TRANSPOSED_FN = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


class _ConvTransposeNd(_ConvNd):
    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups=1,
        bias=True,
        dilation=1,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        name = type(self).__name__
        if padding_mode != "zeros":
            raise ValueError(
                f'[{name}] only "zeros" padding mode is supported, got {padding_mode!r}'
            )
        if isinstance(padding, str):
            raise ValueError(f"[{name}] padding must be ints, got {padding!r}")
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, True,
            output_padding, groups, bias, padding_mode, device, dtype,
        )  # fmt: skip

    def _output_padding(
        self, input, output_size, stride, padding, kernel_size, num_spatial_dims, dilation=None
    ):
        """The output_padding that gives output_size (PyTorch's helper, same checks)."""
        if output_size is None:
            return self.output_padding
        nd = num_spatial_dims
        size = list(output_size)
        has_batch = input.ndim == nd + 2
        if len(size) == nd + 1 + int(has_batch):
            size = size[-nd:]
        if len(size) != nd:
            raise ValueError(
                f"[{type(self).__name__}] output_size must have {nd} or {nd + 1 + int(has_batch)} "
                f"elements (got {len(output_size)})"
            )
        dilation = dilation or (1,) * nd
        result = []
        for d in range(nd):
            spatial = input.shape[input.ndim - nd + d]
            low = (
                (spatial - 1) * stride[d] - 2 * padding[d] + dilation[d] * (kernel_size[d] - 1) + 1
            )
            high = low + stride[d] - 1
            if not low <= size[d] <= high:
                raise ValueError(
                    f"[{type(self).__name__}] requested an output size of {size}, but valid "
                    f"sizes range from {low} to {high} in dimension {d} (for an input of "
                    f"{list(input.shape)[-nd:]})"
                )
            result.append(size[d] - low)
        return tuple(result)

    def forward(self, input, output_size=None):
        nd = self._nd
        output_padding = self._output_padding(
            input, output_size, self.stride, self.padding, self.kernel_size, nd, self.dilation
        )
        return _TRANSPOSED_FN[nd](
            input, self.weight, self.bias, self.stride, self.padding, output_padding,
            self.groups, self.dilation,
        )  # fmt: skip


class ConvTranspose1d(_ConvTransposeNd):
    """Transposed 1-d convolution; weight (C_in, C_out / groups, k)."""

    _nd = 1


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-d convolution; weight (C_in, C_out / groups, kH, kW)."""

    _nd = 2


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-d convolution; weight (C_in, C_out / groups, kD, kH, kW)."""

    _nd = 3
