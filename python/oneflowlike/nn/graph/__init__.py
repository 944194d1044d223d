"""nn.Graph: a module's step traced once per input signature and run as a compiled graph by the
C++ executor (OneFlow's API). This first stage compiles inference graphs: build() runs the
forward without autograd; training graphs (backward and optimizer in the graph) come next."""

import inspect

import oneflowlike as flow
from oneflowlike import _C


class Graph:
    """Subclass, set modules as attributes in __init__, and define build(*inputs)."""

    def __init__(self):
        self._compiled = {}  # input signature -> compiled graph
        self._last = None

    def build(self, *args):
        raise NotImplementedError("[graph] subclasses of nn.Graph define build(*inputs)")

    def add_optimizer(self, optimizer, lr_sch=None):
        raise NotImplementedError(
            "[graph] training graphs (add_optimizer) are not supported yet: this stage of graph "
            "mode compiles inference graphs only"
        )

    def __call__(self, *args):
        if not hasattr(self, "_compiled"):
            raise RuntimeError(
                f"[graph] {type(self).__name__}.__init__ must call super().__init__()"
            )
        signature = inspect.signature(self.build)
        try:
            signature.bind(*args)
        except TypeError:
            raise TypeError(
                f"[graph] {type(self).__name__}.build{signature} takes "
                f"{len(signature.parameters)} inputs, got {len(args)}"
            ) from None
        for i, a in enumerate(args):
            if not isinstance(a, flow.Tensor):
                raise TypeError(
                    f"[graph] input {i} of {type(self).__name__}.build{signature} is a "
                    f"{type(a).__name__}, expected a Tensor"
                )
        key = tuple((tuple(a.shape), a.dtype, str(a.device)) for a in args)
        if key not in self._compiled:
            self._compiled[key] = self._trace(args)
        compiled, single = self._compiled[key]
        self._last = compiled
        outs = compiled.run(list(args))
        return outs[0] if single else tuple(outs)

    def _trace(self, args):
        trace = _C.Trace()
        try:
            inputs = [trace.input(a) for a in args]
            with flow.no_grad():
                result = self.build(*inputs)
            single = not isinstance(result, (tuple, list))
            outputs = [result] if single else list(result)
            for i, o in enumerate(outputs):
                if not isinstance(o, flow.Tensor):
                    raise TypeError(
                        f"[graph] build() returned a {type(o).__name__} as output {i}; "
                        "return tensors (or a tuple of them)"
                    )
            return trace.finish(outputs), single
        finally:
            trace.close()

    @property
    def num_compiled(self):
        """How many input signatures have been traced and compiled."""
        return len(self._compiled)

    def __repr__(self):
        if self._last is None:
            return f"{type(self).__name__}(not compiled yet: call it once)"
        return (
            f"{type(self).__name__}(inputs: {self._last.signature}; "
            f"{self._last.num_nodes} nodes, {self._last.num_variables} variables)\n{self._last}"
        )
