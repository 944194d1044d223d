"""Batch normalisation: BatchNorm1d/2d/3d, SyncBatchNorm and their lazy forms.

batch_norm is composed of reductions over the batch and positions, so on a global tensor the
statistics are the whole logical batch's, over every rank of the placement: that is what
SyncBatchNorm asks for, and BatchNorm computes it too."""

import oneflowlike as flow

from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from . import _factory
from .lazy import LazyModuleMixin, UninitializedBuffer, UninitializedParameter

__all__ = [
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "LazyBatchNorm1d",
    "LazyBatchNorm2d",
    "LazyBatchNorm3d",
    "SyncBatchNorm",
]


def _batch_counter(device):
    counter = flow.tensor(0, dtype=flow.int64)
    return counter if device is None else counter.to(device)


class _NormBase(Module):
    """Affine parameters and running statistics shared by batch and instance norm."""

    _version = 2

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.1,
        affine=True,
        track_running_stats=True,
        device=None,
        dtype=None,
        *,
        bias=True,
    ):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(_factory.empty(num_features, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(_factory.empty(num_features, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer(
                "running_mean", _factory.zeros(num_features, dtype=dtype, device=device)
            )
            self.register_buffer(
                "running_var", _factory.ones(num_features, dtype=dtype, device=device)
            )
            self.register_buffer("num_batches_tracked", _batch_counter(device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            with flow.no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def extra_repr(self):
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )

    def _load_from_state_dict(self, state_dict, prefix, *args):
        # Checkpoints from before the batch counter existed (PyTorch's version < 2) lack it.
        key = prefix + "num_batches_tracked"
        if self.track_running_stats and key not in state_dict:
            counter = self.num_batches_tracked
            usable = counter is not None and counter.device.type != "meta"
            state_dict[key] = counter if usable else flow.tensor(0, dtype=flow.int64)
        super()._load_from_state_dict(state_dict, prefix, *args)


def _expect_dims(input, dims):
    if input.dim() not in dims:
        wanted = " or ".join(f"{d}D" for d in dims)
        raise ValueError(
            f"expected {wanted} input (got {input.dim()}D input of shape {tuple(input.shape)})"
        )


class _BatchNorm(_NormBase):
    def _average_factor(self):
        """The running-statistics momentum of this step; counts the batch when training."""
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with flow.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        return factor

    def forward(self, input):
        self._check_input_dim(input)
        factor = self._average_factor()
        # Batch statistics in training, and in eval when there are no running ones.
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(
            input,
            self.running_mean if track else None,
            self.running_var if track else None,
            self.weight,
            self.bias,
            bn_training,
            factor,
            self.eps,
        )


class BatchNorm1d(_BatchNorm):
    """Input (N, C) or (N, C, L)."""

    def _check_input_dim(self, input):
        _expect_dims(input, (2, 3))


class BatchNorm2d(_BatchNorm):
    """Input (N, C, H, W)."""

    def _check_input_dim(self, input):
        _expect_dims(input, (4,))


class BatchNorm3d(_BatchNorm):
    """Input (N, C, D, H, W)."""

    def _check_input_dim(self, input):
        _expect_dims(input, (5,))


class SyncBatchNorm(_BatchNorm):
    """Batch norm whose statistics are the whole batch's across ranks. On local tensors it is
    BatchNorm; on global tensors (the ranks of their placement) batch_norm's reductions already
    give the logical batch's statistics, so there is no separate all-reduce path."""

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.1,
        affine=True,
        track_running_stats=True,
        process_group=None,
        device=None,
        dtype=None,
        *,
        bias=True,
    ):
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(
                f"expected at least 2D input (got {input.dim()}D input of shape "
                f"{tuple(input.shape)})"
            )

    def forward(self, input):
        self._check_input_dim(input)
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """Replaces every BatchNorm*D in `module` (itself included) by a SyncBatchNorm sharing
        its parameters and running statistics."""
        output = module
        if isinstance(module, _BatchNorm):
            output = SyncBatchNorm(
                module.num_features,
                module.eps,
                module.momentum,
                module.affine,
                module.track_running_stats,
                process_group,
                bias=module.bias is not None,
            )
            if module.affine:
                output.weight = module.weight
                output.bias = module.bias
            output.running_mean = module.running_mean
            output.running_var = module.running_var
            output.num_batches_tracked = module.num_batches_tracked
            output.training = module.training
            if hasattr(module, "qconfig"):
                output.qconfig = module.qconfig
        for name, child in module.named_children():
            output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return output


class _LazyNormBase(LazyModuleMixin, _NormBase):
    """num_features from the input's dim 1 on the first call."""

    def __init__(
        self,
        eps=1e-5,
        momentum=0.1,
        affine=True,
        track_running_stats=True,
        device=None,
        dtype=None,
        *,
        bias=True,
    ):
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = _batch_counter(device)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if not self.has_uninitialized_params():
            return
        if input.dim() < 2:
            raise ValueError(
                f"{self._get_name()}: expected an input (N, C, ...), got {tuple(input.shape)}"
            )
        self.num_features = input.shape[1]
        with flow.no_grad():
            if self.affine:
                self.weight.materialize((self.num_features,))
                if self.bias is not None:
                    self.bias.materialize((self.num_features,))
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))
                self.running_var.materialize((self.num_features,))
        self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    cls_to_become = BatchNorm1d

    def _check_input_dim(self, input):
        _expect_dims(input, (2, 3))


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    cls_to_become = BatchNorm2d

    def _check_input_dim(self, input):
        _expect_dims(input, (4,))


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    cls_to_become = BatchNorm3d

    def _check_input_dim(self, input):
        _expect_dims(input, (5,))
