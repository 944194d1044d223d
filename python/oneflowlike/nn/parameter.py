"""nn.Parameter: a Tensor that a Module registers as a learnable parameter."""

import oneflowlike as flow


class Parameter(flow.Tensor):
    """A leaf tensor that shares ``data``'s storage (detached) and requires grad by default."""

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = flow.empty(0)
        super().__init__(data.detach())
        self.requires_grad = requires_grad

    # Tensors define ==, which would make them unhashable; parameters key dicts by identity.
    __hash__ = object.__hash__

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = Parameter(self.detach().clone(), self.requires_grad)
        return memo[id(self)]


class Buffer(flow.Tensor):
    """PyTorch's nn.Buffer: a tensor that, assigned to a module attribute, registers as a buffer
    (`persistent`: saved in the state dict), not as a parameter."""

    def __init__(self, data=None, *, persistent=True):
        if data is None:
            data = flow.empty(0)
        super().__init__(data.detach())
        self.persistent = persistent

    __hash__ = object.__hash__
