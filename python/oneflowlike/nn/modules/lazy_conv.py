"""LazyConv1d/2d/3d and LazyConvTranspose1d/2d/3d: in_channels from the first input.

Each is made for the convolution class that conv.py defines (a class conv.py does not have yet
gets no lazy form here), so this file follows conv.py without editing it."""

import oneflowlike as flow

from . import conv
from .lazy import LazyModuleMixin, UninitializedParameter

__all__ = []


class _LazyConvXdMixin(LazyModuleMixin):
    _num_spatial_dims = 2
    _transposed = False

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _get_in_channels(self, input):
        unbatched = self._num_spatial_dims + 1
        if input.dim() not in (unbatched, unbatched + 1):
            raise RuntimeError(
                f"Expected {unbatched}D (unbatched) or {unbatched + 1}D (batched) input to "
                f"{self.__class__.__name__}, but got input of size: {tuple(input.shape)}"
            )
        return input.shape[1] if input.dim() == unbatched + 1 else input.shape[0]

    def initialize_parameters(self, input, *args, **kwargs):
        if not self.has_uninitialized_params():
            return
        self.in_channels = self._get_in_channels(input)
        if self.in_channels % self.groups != 0:
            raise ValueError(
                f"in_channels must be divisible by groups, got in_channels {self.in_channels} "
                f"and groups {self.groups}"
            )
        kernel = tuple(self.kernel_size)
        if self._transposed:
            shape = (self.in_channels, self.out_channels // self.groups) + kernel
        else:
            shape = (self.out_channels, self.in_channels // self.groups) + kernel
        with flow.no_grad():
            self.weight.materialize(shape)
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
        self.reset_parameters()


def _lazy_init(cls, transposed):
    def __init__(
        self,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        *rest,
        device=None,
        dtype=None,
        **kwargs,
    ):
        # PyTorch's positional order after padding: dilation, groups, bias, padding_mode for
        # convolutions; output_padding, groups, bias, dilation, padding_mode for transposed ones.
        names = (
            ("output_padding", "groups", "bias", "dilation", "padding_mode")
            if transposed
            else ("dilation", "groups", "bias", "padding_mode")
        )
        if len(rest) > len(names):
            raise TypeError(f"{type(self).__name__}() takes at most {len(names) + 4} arguments")
        options = dict(zip(names, rest))
        options.update(kwargs)
        bias = options.pop("bias", True)
        super(cls, self).__init__(
            0,
            0,
            kernel_size,
            stride=stride,
            padding=padding,
            bias=False,
            device=device,
            dtype=dtype,
            **options,
        )
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    return __init__


def _make(name, base_name, dims, transposed):
    base = getattr(conv, base_name, None)
    if base is None:
        return
    cls = type(
        name,
        (_LazyConvXdMixin, base),
        {
            "__doc__": f"A {base_name} whose in_channels is the first input's channel count.",
            "__module__": __name__,
            "cls_to_become": base,
            "_num_spatial_dims": dims,
            "_transposed": transposed,
        },
    )
    cls.__init__ = _lazy_init(cls, transposed)
    cls.__init__.__qualname__ = f"{name}.__init__"
    globals()[name] = cls
    __all__.append(name)


for _dims in (1, 2, 3):
    _make(f"LazyConv{_dims}d", f"Conv{_dims}d", _dims, False)
    _make(f"LazyConvTranspose{_dims}d", f"ConvTranspose{_dims}d", _dims, True)
