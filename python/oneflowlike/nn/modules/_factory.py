"""Tensor factories for module constructors (``device`` is applied with ``Tensor.to``)."""

import oneflowlike as flow


def _place(tensor, device):
    return tensor if device is None else tensor.to(device)


def empty(*shape, dtype=None, device=None):
    return _place(flow.empty(*shape, dtype=dtype), device)


def zeros(*shape, dtype=None, device=None):
    return _place(flow.zeros(*shape, dtype=dtype), device)


def ones(*shape, dtype=None, device=None):
    return _place(flow.ones(*shape, dtype=dtype), device)
