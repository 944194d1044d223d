"""Conv2d."""

__all__ = ["Conv2d"]

import math

from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from . import _factory


class Conv2d(Module):
    """2-D convolution over (N, C_in, H, W); weight (C_out, C_in / groups, kH, kW)."""

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
        super().__init__()
        if groups <= 0 or in_channels % groups or out_channels % groups:
            raise ValueError(
                f"Conv2d: in_channels {in_channels} and out_channels {out_channels} "
                f"must be divisible by groups {groups}"
            )
        if padding_mode != "zeros":
            raise NotImplementedError(f"Conv2d: padding_mode {padding_mode!r} is not supported")
        if isinstance(padding, str) and padding not in ("same", "valid"):
            raise ValueError(f"Invalid padding string {padding!r}, should be 'same' or 'valid'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = F._pair(kernel_size, "kernel_size")
        self.stride = F._pair(stride, "stride")
        self.padding = padding if isinstance(padding, str) else F._pair(padding, "padding")
        self.dilation = F._pair(dilation, "dilation")
        self.groups = groups
        self.padding_mode = padding_mode
        if padding == "same" and self.stride != (1, 1):
            raise ValueError("padding='same' is not supported for strided convolutions")
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

    def forward(self, input):
        return F.conv2d(
            input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
        )

    def extra_repr(self):
        text = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0, 0):
            text += f", padding={self.padding}"
        if self.dilation != (1, 1):
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        return text
