"""state_dict() / load_state_dict() for nn.Module, kept apart to keep module.py short."""

import itertools
from collections import OrderedDict, namedtuple

import oneflowlike as flow

from .parameter import Parameter


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _laid_out_as(value, param):
    """A checkpoint's `value` in `param`'s layout (same logical shape): a global param takes its
    own placement and SBP whatever the value's (a local value is the whole tensor, the
    placement's first rank's; a global one is resharded), a local param the whole logical
    value. So single-process checkpoints load into global models and the other way round."""
    if param.is_global:
        if not value.is_global:
            return flow._global.like_global(value, param)
        if value.placement == param.placement and value.sbp == param.sbp:
            return value
        return value.to_global(placement=param.placement, sbp=param.sbp)
    if value.is_global and param.device.type != "meta" and not param.is_traced:
        whole = flow._C.global_to_full(value, flow._global._world())
        return whole if whole.device == param.device else whole.to(param.device)
    return value


class StateDictMixin:
    """Saving and loading of parameters and persistent buffers, as torch.nn.Module."""

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()

    def state_dict(self, *, destination=None, prefix="", keep_vars=False):
        if destination is None:
            destination = OrderedDict()
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(
                    destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars
                )
        return destination

    def _load_from_state_dict(
        self, state_dict, prefix, strict, missing, unexpected, errors, assign
    ):
        persistent = {
            k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set
        }
        local_state = {
            k: v for k, v in itertools.chain(self._parameters.items(), persistent.items())
        }
        for name, param in local_state.items():
            key = prefix + name
            if param is None:
                continue
            if key not in state_dict:
                missing.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, flow.Tensor):
                errors.append(
                    f'While copying the parameter named "{key}", expected a Tensor from the '
                    f"checkpoint but received {type(value).__name__}"
                )
            elif tuple(value.shape) != tuple(param.shape):
                errors.append(
                    f"size mismatch for {key}: copying a param with shape {tuple(value.shape)} "
                    f"from checkpoint, the shape in current model is {tuple(param.shape)}."
                )
            else:
                try:
                    with flow.no_grad():
                        value = _laid_out_as(value.detach(), param)
                        if not assign:
                            param.copy_(value)
                        elif name in self._parameters:
                            self._parameters[name] = Parameter(value, param.requires_grad)
                        else:
                            self._buffers[name] = value
                except Exception as ex:  # report every failing key, not only the first
                    errors.append(f'While copying the parameter named "{key}": {ex}')
        for key in state_dict:
            if key.startswith(prefix):
                first = key[len(prefix) :].split(".", 1)[0]
                if first not in self._modules and first not in local_state:
                    unexpected.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []

        def load(module, prefix):
            module._load_from_state_dict(
                state_dict, prefix, strict, missing, unexpected, errors, assign
            )
            for name, child in module._modules.items():
                if child is not None:
                    load(child, prefix + name + ".")

        load(self, "")
        if strict:
            if unexpected:
                keys = ", ".join(f'"{k}"' for k in unexpected)
                errors.insert(0, f"Unexpected key(s) in state_dict: {keys}. ")
            if missing:
                keys = ", ".join(f'"{k}"' for k in missing)
                errors.insert(0, f"Missing key(s) in state_dict: {keys}. ")
        if errors:
            raise RuntimeError(
                f"Error(s) in loading state_dict for {self._get_name()}:\n\t" + "\n\t".join(errors)
            )
        return _IncompatibleKeys(missing, unexpected)
