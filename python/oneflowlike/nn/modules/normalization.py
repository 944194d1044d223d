"""LayerNorm, RMSNorm, GroupNorm and the local response norms (batch and instance norm are in
batchnorm.py and instancenorm.py)."""

__all__ = ["CrossMapLRN2d", "GroupNorm", "LayerNorm", "LocalResponseNorm", "RMSNorm"]

import oneflowlike as flow

from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from . import _factory


def _as_shape(normalized_shape):
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(normalized_shape)


class LayerNorm(Module):
    def __init__(
        self,
        normalized_shape,
        eps=1e-5,
        elementwise_affine=True,
        bias=True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(
                _factory.empty(*self.normalized_shape, dtype=dtype, device=device)
            )
            if bias:
                self.bias = Parameter(
                    _factory.empty(*self.normalized_shape, dtype=dtype, device=device)
                )
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )


class RMSNorm(Module):
    def __init__(
        self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None
    ):
        super().__init__()
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(
                _factory.empty(*self.normalized_shape, dtype=dtype, device=device)
            )
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, input):
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}"
        )


class GroupNorm(Module):
    """PyTorch's nn.GroupNorm: the channels in `num_groups` groups, each normalized over its
    channels and positions, then an affine weight and bias per channel."""

    def __init__(
        self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True
    ):
        super().__init__()
        if num_groups <= 0 or num_channels % num_groups:
            raise ValueError(
                f"GroupNorm: num_channels must be divisible by num_groups, got num_groups "
                f"{num_groups} and num_channels {num_channels}"
            )
        self.num_groups, self.num_channels, self.eps, self.affine = (
            num_groups, num_channels, eps, affine,
        )  # fmt: skip
        if affine:
            self.weight = Parameter(_factory.empty(num_channels, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(_factory.empty(num_channels, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )


class LocalResponseNorm(Module):
    """Each element divided by (k + alpha * mean of squares over `size` neighbouring channels)
    ** beta."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(Module):
    """The legacy (Lua Torch) cross-channel LRN on 4-d input, with PyTorch's exact windows: the
    forward sums squares over channels c-P+1..c+P-1 (P = (size-1)//2 + 1; from P on, channel 0
    stays in the sum, as PyTorch's running update never subtracts it), and the gradient flows
    through the window PyTorch's hand-written backward uses."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def _windows(self, channels, dtype, device):
        pre = int((self.size - 1) / 2 + 1)
        forward = [[0.0] * channels for _ in range(channels)]
        for c in range(channels):
            for j in range(min(c + pre - 1, channels - 1) + 1):
                if j == 0 or j > c - pre:
                    forward[c][j] = 1.0
        inverse = int(self.size - (self.size - 1) / 2)
        backward = [[0.0] * channels for _ in range(channels)]
        for c in range(channels):  # x[c] reaches scale[c - inverse .. c - inverse + size - 1]
            for j in range(c - inverse, c - inverse + self.size):
                if 0 <= j < channels:
                    backward[j][c] = 1.0
        as_tensor = lambda m: flow.tensor(m, dtype=dtype, device=device)  # noqa: E731
        return as_tensor(forward), as_tensor(backward)

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError(
                f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead "
                f"(shape {tuple(input.shape)})."
            )
        channels = input.shape[1]
        forward, backward = self._windows(channels, input.dtype, input.device)
        squares = input * input
        # scale = k + alpha / size * (window sum of squares), mixed over channels by a matrix.
        mix = lambda m: flow.einsum("cj,njhw->nchw", m, squares)  # noqa: E731
        coeff = self.alpha / self.size
        value = mix(forward).detach() * coeff + self.k
        surrogate = mix(backward) * coeff
        scale = value + (surrogate - surrogate.detach())
        return input * scale ** (-self.beta)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
