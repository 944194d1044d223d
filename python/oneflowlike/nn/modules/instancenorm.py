"""Instance normalisation: InstanceNorm1d/2d/3d and their lazy forms."""

import warnings

from .. import functional as F
from .batchnorm import _LazyNormBase, _NormBase

__all__ = [
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "LazyInstanceNorm1d",
    "LazyInstanceNorm2d",
    "LazyInstanceNorm3d",
]


class _InstanceNorm(_NormBase):
    _no_batch_dim = 0  # the input rank without the batch dimension

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.1,
        affine=False,
        track_running_stats=False,
        device=None,
        dtype=None,
        *,
        bias=True,
    ):
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )

    def _check_input_dim(self, input):
        dims = (self._no_batch_dim, self._no_batch_dim + 1)
        if input.dim() not in dims:
            raise ValueError(
                f"expected {dims[0]}D or {dims[1]}D input (got {input.dim()}D input of shape "
                f"{tuple(input.shape)})"
            )

    def _apply_instance_norm(self, input):
        # momentum=None gives 0 here, as in PyTorch: instance norm keeps no batch counter.
        return F.instance_norm(
            input,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            self.momentum if self.momentum is not None else 0.0,
            self.eps,
        )

    def _load_from_state_dict(
        self, state_dict, prefix, strict, missing, unexpected, errors, assign
    ):
        # Checkpoints from before PyTorch 0.4 carry running stats that are no longer tracked.
        if not self.track_running_stats:
            keys = [prefix + n for n in ("running_mean", "running_var") if prefix + n in state_dict]
            if keys:
                names = " and ".join(f'"{k}"' for k in keys)
                klass = type(self).__name__
                errors.append(
                    f"Unexpected running stats buffer(s) {names} for {klass} with "
                    f"track_running_stats=False. If state_dict is a checkpoint saved before "
                    f"0.4.0, this may be expected because {klass} does not track running stats "
                    f"by default since 0.4.0. Please remove these keys from state_dict. If the "
                    f"running stats are actually needed, instead set track_running_stats=True "
                    f"in {klass} to enable them. See the documentation of {klass} for details."
                )
                for key in keys:
                    state_dict.pop(key)
        super()._load_from_state_dict(
            state_dict, prefix, strict, missing, unexpected, errors, assign
        )

    def forward(self, input):
        self._check_input_dim(input)
        feature_dim = input.dim() - self._no_batch_dim
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(
                    f"expected input's size at dim={feature_dim} to match num_features "
                    f"({self.num_features}), but got: {input.shape[feature_dim]}."
                )
            warnings.warn(
                f"input's size at dim={feature_dim} does not match num_features. You can silence "
                f"this warning by not passing in num_features, which is not used because "
                f"affine=False",
                stacklevel=2,
            )
        if input.dim() == self._no_batch_dim:
            return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_instance_norm(input)


class InstanceNorm1d(_InstanceNorm):
    """Input (N, C, L) or (C, L)."""

    _no_batch_dim = 2


class InstanceNorm2d(_InstanceNorm):
    """Input (N, C, H, W) or (C, H, W)."""

    _no_batch_dim = 3


class InstanceNorm3d(_InstanceNorm):
    """Input (N, C, D, H, W) or (C, D, H, W)."""

    _no_batch_dim = 4


class LazyInstanceNorm1d(_LazyNormBase, _InstanceNorm):
    cls_to_become = InstanceNorm1d
    _no_batch_dim = 2


class LazyInstanceNorm2d(_LazyNormBase, _InstanceNorm):
    cls_to_become = InstanceNorm2d
    _no_batch_dim = 3


class LazyInstanceNorm3d(_LazyNormBase, _InstanceNorm):
    cls_to_become = InstanceNorm3d
    _no_batch_dim = 4
