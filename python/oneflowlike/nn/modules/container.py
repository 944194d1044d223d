"""Sequential, ModuleList, ModuleDict, ParameterList and ParameterDict (torch.nn's containers)."""

__all__ = [
    "Container",
    "ModuleDict",
    "ModuleList",
    "ParameterDict",
    "ParameterList",
    "Sequential",
]

import operator
import warnings
from collections import OrderedDict, abc
from itertools import chain, islice

import oneflowlike as flow

from ..module import Module, _addindent
from ..parameter import Parameter


def _abs_index(idx, size):
    idx = operator.index(idx)
    if not -size <= idx < size:
        raise IndexError(f"index {idx} is out of range")
    return idx % size if size else idx


def _renumber(modules):
    """Keys "0", "1", ... again after a deletion, in the same order, in place."""
    values = list(modules.values())
    modules.clear()
    modules.update((str(i), m) for i, m in enumerate(values))


class Container(Module):
    """Deprecated: what nn.Module now does."""

    def __init__(self, **kwargs):
        super().__init__()
        warnings.warn(
            "nn.Container is deprecated. All of it's functionality is now implemented in "
            "nn.Module. Subclass that instead.",
            FutureWarning,
        )
        for key, value in kwargs.items():
            self.add_module(key, value)


class Sequential(Module):
    """Chains modules; built from modules or from one OrderedDict of name -> module."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def _key(self, idx):
        return next(islice(self._modules.keys(), _abs_index(idx, len(self)), None))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self.__class__(OrderedDict(list(self._modules.items())[idx]))
        return self._modules[self._key(idx)]

    def __setitem__(self, idx, module):
        setattr(self, self._key(idx), module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for key in list(self._modules)[idx]:
                delattr(self, key)
        else:
            delattr(self, self._key(idx))
        _renumber(self._modules)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __dir__(self):
        return [key for key in super().__dir__() if not key.isdigit()]

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(
                f"add operator supports only objects of Sequential class, but {type(other)} is "
                f"given."
            )
        return Sequential(*self, *other)

    def __iadd__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(
                f"add operator supports only objects of Sequential class, but {type(other)} is "
                f"given."
            )
        offset = len(self)
        for i, module in enumerate(other):
            self.add_module(str(i + offset), module)
        return self

    def _check_factor(self, other):
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")

    def __mul__(self, other):
        self._check_factor(other)
        return Sequential(*(list(self) * other))

    __rmul__ = __mul__

    def __imul__(self, other):
        self._check_factor(other)
        modules = list(self)
        for module in modules * (other - 1):
            self.add_module(str(len(self)), module)
        return self

    def pop(self, key):
        module = self[key]
        del self[key]
        return module

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index, module):
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        index = index + n if index < 0 else index
        for i in range(n, index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module
        return self

    def extend(self, sequential):
        for module in sequential:
            self.append(module)
        return self

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of submodules, registered under the names "0", "1", ..."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self += modules

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self.__class__(list(self._modules.values())[idx])
        return self._modules[str(_abs_index(idx, len(self)))]

    def __setitem__(self, idx, module):
        setattr(self, str(_abs_index(idx, len(self))), module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, str(_abs_index(idx, len(self))))
        _renumber(self._modules)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        combined = ModuleList()
        for i, module in enumerate(chain(self, other)):
            combined.add_module(str(i), module)
        return combined

    def __dir__(self):
        return [key for key in super().__dir__() if not key.isdigit()]

    def __repr__(self):
        """Runs of equal submodules print once, as "(i-j): n x Module(...)"."""
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        blocks = []  # [start, end, repr]
        for i, r in enumerate(reprs):
            if blocks and blocks[-1][2] == r:
                blocks[-1][1] = i
            else:
                blocks.append([i, i, r])
        lines = []
        for start, end, r in blocks:
            text = (
                f"({start}): {r}" if start == end else f"({start}-{end}): {end - start + 1} x {r}"
            )
            lines.append(_addindent(text, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def insert(self, index, module):
        for i in range(len(self._modules), index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key):
        module = self[key]
        del self[key]
        return module

    def extend(self, modules):
        if not isinstance(modules, abc.Iterable):
            raise TypeError(
                f"ModuleList.extend should be called with an iterable, but got "
                f"{type(modules).__name__}"
            )
        offset = len(self)
        for i, module in enumerate(modules):
            self.add_module(str(offset + i), module)
        return self


def _pairs(values, kind):
    """(key, value) pairs of a mapping (a plain one sorted, as PyTorch does for parameters) or
    of an iterable of pairs."""
    if not isinstance(values, abc.Iterable):
        raise TypeError(
            f"{kind}.update should be called with an iterable of key/value pairs, but got "
            f"{type(values).__name__}"
        )
    if isinstance(values, (OrderedDict, ModuleDict, ParameterDict)):
        return list(values.items())
    if isinstance(values, abc.Mapping):
        return sorted(values.items()) if kind == "ParameterDict" else list(values.items())
    pairs = []
    for j, pair in enumerate(values):
        if not isinstance(pair, abc.Iterable):
            raise TypeError(
                f"{kind} update sequence element #{j} should be Iterable; is "
                f"{type(pair).__name__}"
            )
        pair = tuple(pair)
        if len(pair) != 2:
            raise ValueError(
                f"{kind} update sequence element #{j} has length {len(pair)}; 2 is required"
            )
        pairs.append(pair)
    return pairs


class ModuleDict(Module):
    """An ordered dict of submodules."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self):
        self._modules.clear()

    def pop(self, key):
        module = self[key]
        del self[key]
        return module

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        for key, module in _pairs(modules, "ModuleDict"):
            self[key] = module


def _describe(value):
    """One line of a parameter container's repr."""
    if not isinstance(value, flow.Tensor):
        return f"Object of type: {type(value).__name__}"
    size = "x".join(str(s) for s in value.shape)
    device = f" ({value.device})" if value.device.type == "cuda" else ""
    kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
    return f"{kind} containing: [{value.dtype} of size {size}{device}]"


def _as_parameter(value):
    if isinstance(value, flow.Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


class ParameterList(Module):
    """A list of parameters (tensors are wrapped as Parameters; other objects are kept as
    attributes), registered under the names "0", "1", ..."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = self.__class__()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, str(_abs_index(idx, len(self))))

    def __setitem__(self, idx, param):
        setattr(self, str(_abs_index(idx, len(self))), _as_parameter(param))

    def __len__(self):
        return self._size

    def __iter__(self):
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def __dir__(self):
        return [key for key in super().__dir__() if not key.isdigit()]

    def append(self, value):
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values):
        if not isinstance(values, abc.Iterable) or isinstance(values, flow.Tensor):
            raise TypeError(
                f"ParameterList.extend should be called with an iterable, but got "
                f"{type(values).__name__}"
            )
        for value in values:
            self.append(value)
        return self

    def extra_repr(self):
        return "\n".join(f"  ({k}): {_describe(p)}" for k, p in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters (tensors are wrapped as Parameters; other objects are kept
    as attributes)."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _attr(key):
        if not isinstance(key, str):
            raise TypeError(
                f"Index given to ParameterDict cannot be used as a key as it is not a string "
                f"(type is '{type(key).__name__}'). Open an issue on github if you need "
                f"non-string keys."
            )
        return key

    def __getitem__(self, key):
        return getattr(self, self._attr(key))

    def __setitem__(self, key, value):
        attr = self._attr(key)
        self._keys[key] = None
        setattr(self, attr, _as_parameter(value))

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, self._attr(key))

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(list(self._keys))

    def __contains__(self, key):
        return key in self._keys

    def copy(self):
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self):
        for key in list(self._keys):
            del self[key]

    def pop(self, key):
        value = self[key]
        del self[key]
        return value

    def popitem(self):
        if not self._keys:
            raise KeyError("popitem(): ParameterDict is empty")
        key = next(reversed(list(self._keys)))
        return key, self.pop(key)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def fromkeys(self, keys, default=None):
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def update(self, parameters):
        for key, value in _pairs(parameters, "ParameterDict"):
            self[key] = value

    def extra_repr(self):
        return "\n".join(f"  ({k}): {_describe(p)}" for k, p in self.items())

    def __call__(self, input):
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other):
        copy = self.copy()
        copy.update(other)
        return copy

    def __ror__(self, other):
        copy = other.copy()
        copy.update(self)
        return copy

    def __ior__(self, other):
        self.update(other)
        return self
