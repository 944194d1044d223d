"""torch.nn's recurrent modules: RNN, LSTM, GRU and their cells.

Each layer projects the whole input sequence with one matmul (x @ W_ih^T + b). An LSTM or GRU layer
over sequences of one length (float32 or float64, no projection) then runs as one fused op per
direction (`_lstm_layer`, `_gru_layer`, ops/rnn.cpp: a matmul and one cell kernel per step, and a
backward whose weight gradient is one GEMM), as PyTorch's oneDNN and cuDNN layers do. The rest
(RNN, packed sequences of several lengths, projections) are composites: each time step runs the
hidden matmul and the gate math on the step's slice. Sequences are held flat, time-major ((sum of
batch sizes), features), so padded and packed inputs share one path: a padded batch is a packed
one whose batch sizes are all equal.

Over 600 lines: torch.nn's recurrent modules and cells, one module as in PyTorch."""

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

import math
import numbers
import warnings

import oneflowlike as flow

from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from . import _factory

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# --- one time step of each cell: xw is the step's input projection with its biases folded in.
# States are (B, H), or (D, B, H) when D directions run side by side as one batched matmul. ---


def _addmm(bias, a, w):
    return flow.addmm(bias, a, w) if a.dim() == 2 else flow.baddbmm(bias, a, w)


def _rnn_step(act, xw, h, w_hh_t):
    return act(_addmm(xw, h, w_hh_t))


def _lstm_step(xw, h, c, w_hh_t, w_hr_t):
    gates = _addmm(xw, h, w_hh_t)
    # one sigmoid over all four gates (the g quarter is discarded) beats two sliced calls
    i, f, _, o = flow.sigmoid(gates).chunk(4, -1)
    hidden = c.shape[-1]
    g = flow.tanh(gates.narrow(-1, 2 * hidden, hidden))
    c = flow.addcmul(f * c, i, g)
    h = o * flow.tanh(c)
    if w_hr_t is not None:
        h = flow.matmul(h, w_hr_t)
    return h, c


def _gru_step(xw_rz, xw_n, h, w_hh_rz_t, w_hh_n_t, b_hh_n):
    r, z = flow.sigmoid(_addmm(xw_rz, h, w_hh_rz_t)).chunk(2, -1)
    hn = flow.matmul(h, w_hh_n_t) if b_hh_n is None else _addmm(b_hh_n, h, w_hh_n_t)
    n = flow.tanh(flow.addcmul(xw_n, r, hn))
    return flow.addcmul(n, z, h - n)  # (1 - z) * n + z * h


def _activation(mode):
    return flow.relu if mode == "RNN_RELU" else flow.tanh


class _Cell:
    """The per-forward view of one (layer, direction): transposed weights, folded biases."""

    def __init__(self, mode, weights, has_bias, proj):
        w_ih, w_hh = weights[0], weights[1]
        b_ih, b_hh = (weights[2], weights[3]) if has_bias else (None, None)
        self.mode = mode
        self.w_hr_t = weights[-1].t() if proj else None
        self.w_ih, self.w_hh, self.b_hh_n = w_ih, w_hh, None
        if mode == "GRU":
            hidden = w_hh.shape[0] // 3
            w_rz, w_n = w_hh.split([2 * hidden, hidden], 0)
            self.w_hh_t = (w_rz.t(), w_n.t())
            self.b_x = b_ih
            if has_bias:
                b_rz, self.b_hh_n = b_hh.split([2 * hidden, hidden], 0)
                # r and z take b_hh outside the reset gate, so it folds into the input side
                self.b_x = b_ih + flow.cat([b_rz, flow.zeros_like(self.b_hh_n)], 0)
        else:
            self.w_hh_t = (w_hh.t(),)
            self.b_x = None if b_ih is None else b_ih + b_hh

    @classmethod
    def stacked(cls, cells):
        """One cell whose weights carry a leading direction axis, for batched matmuls."""
        out = cls.__new__(cls)
        out.mode = cells[0].mode
        out.w_hh_t = tuple(flow.stack(ws, 0) for ws in zip(*(c.w_hh_t for c in cells)))
        out.w_hr_t = None
        if cells[0].w_hr_t is not None:
            out.w_hr_t = flow.stack([c.w_hr_t for c in cells], 0)
        out.b_hh_n = None
        if cells[0].b_hh_n is not None:
            out.b_hh_n = flow.stack([c.b_hh_n.unsqueeze(0) for c in cells], 0)
        return out

    def project(self, x):
        xw = F.linear(x, self.w_ih, self.b_x)
        if self.mode == "GRU":
            hidden = xw.shape[-1] // 3
            return xw.split([2 * hidden, hidden], -1)
        return (xw,)

    def step(self, xs, state):
        if self.mode == "LSTM":
            return _lstm_step(xs[0], state[0], state[1], self.w_hh_t[0], self.w_hr_t)
        if self.mode == "GRU":
            return (_gru_step(xs[0], xs[1], state[0], *self.w_hh_t, self.b_hh_n),)
        return (_rnn_step(_activation(self.mode), xs[0], state[0], self.w_hh_t[0]),)


# --- one layer over a flat, time-major (sum(batch_sizes), features) sequence ---


def _step_pieces(x, sizes, select=False):
    """x cut along dim 0 into per-step pieces (narrow by `sizes`, or select when `select`).

    The backward of a slice is a zero tensor the size of what was sliced, so cutting T pieces
    straight from the sequence costs O(T^2) memory traffic; cutting through a tree of blocks
    (fan-out 8) makes it O(T log T) for about T/7 more view ops."""
    fanout = 8
    if len(sizes) <= fanout:
        return list(x.unbind(0) if select else x.split(sizes, 0))
    block = -(-len(sizes) // fanout)
    pieces, offset = [], 0
    for start in range(0, len(sizes), block):
        part = sizes[start : start + block]
        length = len(part) if select else sum(part)
        pieces.extend(_step_pieces(x.narrow(0, offset, length), part, select))
        offset += length
    return pieces


def _fused(cell, x, batch_sizes):
    """Whether one direction runs as a fused layer op (`_lstm_layer`, `_gru_layer`)."""
    return (
        cell.mode in ("LSTM", "GRU")
        and cell.w_hr_t is None
        and x.dtype in (flow.float32, flow.float64)
        and all(size == batch_sizes[0] for size in batch_sizes)
    )


def _run_fused(cell, x, steps, state, reverse):
    xw = F.linear(x, cell.w_ih, cell.b_x)
    xw = xw.reshape(steps, xw.shape[0] // steps, xw.shape[-1])
    if cell.mode == "LSTM":
        out, h, c, _, _ = flow._C._lstm_layer(xw, state[0], state[1], cell.w_hh, reverse)
        final = (h, c)
    else:
        b_hn = cell.b_hh_n
        if b_hn is None:
            b_hn = flow.zeros(cell.w_hh.shape[1], dtype=xw.dtype, device=xw.device)
        out, h, _ = flow._C._gru_layer(xw, state[0], cell.w_hh, b_hn, reverse)
        final = (h,)
    return out.reshape(-1, out.shape[-1]), final


def _run_direction(cell, x, batch_sizes, state, reverse):
    """Runs one direction. Returns (output (N, H), final state).

    Sequences are sorted by decreasing length, so at step t only the first batch_sizes[t] rows
    are live: going forward the state shrinks (finished rows are put aside), going backward it
    grows (new rows start from their initial state)."""
    if _fused(cell, x, batch_sizes):
        return _run_fused(cell, x, len(batch_sizes), state, reverse)
    projected = [_step_pieces(p, batch_sizes) for p in cell.project(x)]
    steps = range(len(batch_sizes) - 1, -1, -1) if reverse else range(len(batch_sizes))
    initial = state
    live = batch_sizes[steps[0]]
    if live < initial[0].shape[0]:
        state = tuple(s.narrow(0, 0, live) for s in initial)
    finished, outputs = [], [None] * len(batch_sizes)
    for t in steps:
        size = batch_sizes[t]
        if size < live:
            finished.append(tuple(s.narrow(0, size, live - size) for s in state))
            state = tuple(s.narrow(0, 0, size) for s in state)
        elif size > live:
            state = tuple(
                flow.cat([s, s0.narrow(0, live, size - live)], 0) for s, s0 in zip(state, initial)
            )
        live = size
        state = cell.step([p[t] for p in projected], state)
        outputs[t] = state[0]
    if finished:  # rows put aside last belong to the longer sequences, which come first
        state = tuple(
            flow.cat([s] + [f[k] for f in reversed(finished)], 0) for k, s in enumerate(state)
        )
    return flow.cat(outputs, 0), state


def _run_both_directions(cells, x, steps, batch, state):
    """Equal lengths, both directions at once: step t runs the forward cell on time t and the
    reverse cell on time steps-1-t as one (2, B, .) batch. state: tuple of (2, B, H)."""
    backwards = flow.arange(steps - 1, -1, -1, device=x.device)

    def both(forward, reverse):  # (N, G) each -> steps x (2, B, G), reverse read backwards
        reverse = flow.index_select(reverse.reshape(steps, batch, -1), 0, backwards)
        both = flow.stack([forward.reshape(steps, batch, -1), reverse], 1)
        return _step_pieces(both, [1] * steps, select=True)

    projected = [both(f, r) for f, r in zip(cells[0].project(x), cells[1].project(x))]
    cell = _Cell.stacked(cells)
    outputs = []
    for t in range(steps):
        state = cell.step([p[t] for p in projected], state)
        outputs.append(state[0])
    forward, reverse = flow.stack(outputs, 0).unbind(1)  # (steps, B, H) each
    reverse = flow.index_select(reverse, 0, backwards)
    return flow.cat([forward, reverse], -1).reshape(steps * batch, -1), state


class RNNBase(Module):
    """The multi-layer, optionally bidirectional recurrence shared by RNN, LSTM and GRU."""

    def __init__(
        self,
        mode,
        input_size,
        hidden_size,
        num_layers=1,
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        proj_size=0,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if (
            not isinstance(dropout, numbers.Number)
            or isinstance(dropout, bool)
            or not 0 <= dropout <= 1
        ):
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the probability of an "
                f"element being zeroed, got {dropout!r}"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
                f"num_layers={num_layers}",
                stacklevel=2,
            )
        for name, value, kind in (
            ("bias", bias, bool),
            ("batch_first", batch_first, bool),
            ("input_size", input_size, int),
            ("hidden_size", hidden_size, int),
        ):
            if not isinstance(value, kind):
                raise TypeError(
                    f"{name} should be of type {kind.__name__}, got: {type(value).__name__}"
                )
        if input_size <= 0:
            raise ValueError(f"input_size must be greater than zero, got {input_size}")
        if hidden_size <= 0:
            raise ValueError(f"hidden_size must be greater than zero, got {hidden_size}")
        if num_layers <= 0:
            raise ValueError(f"num_layers must be greater than zero, got {num_layers}")
        if proj_size < 0:
            raise ValueError(
                "proj_size should be a positive integer or zero to disable projections, "
                f"got {proj_size}"
            )
        if proj_size >= hidden_size:
            raise ValueError(
                f"proj_size has to be smaller than hidden_size, got proj_size={proj_size} and "
                f"hidden_size={hidden_size}"
            )
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + str(mode))
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        directions = 2 if bidirectional else 1

        def param(*shape):
            return Parameter(_factory.empty(*shape, dtype=dtype, device=device))

        self._flat_weights_names, self._all_weights = [], []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else real_hidden * directions
            for direction in range(directions):
                suffix = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih", (gate_size, layer_input))]
                shapes.append(("weight_hh", (gate_size, real_hidden)))
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                names = []
                for stem, shape in shapes:
                    name = f"{stem}_l{layer}{suffix}"
                    setattr(self, name, param(*shape))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self):
        """A no-op: there is no fused weight buffer to compact (cuDNN's reason for it)."""

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # --- argument handling, as torch's check_forward_args ---

    def _name(self):
        return "RNN" if self.mode.startswith("RNN") else self.mode

    def _state_sizes(self):
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (real_hidden, self.hidden_size) if self.mode == "LSTM" else (self.hidden_size,)

    def check_input(self, input, batch_sizes):
        weight = self._flat_weights[0]
        if input.dtype != weight.dtype:
            raise ValueError(
                f"{self._name()}: input dtype ({input.dtype}) does not match weight dtype "
                f"({weight.dtype}). Convert input: input.to({weight.dtype}), or convert model: "
                f"model.to({input.dtype})"
            )
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(
                "input.size(-1) must be equal to input_size. "
                f"Expected {self.input_size}, got {input.shape[-1]}"
            )

    def _normalize_state(self, hx, batched):
        """hx as a tuple of 3-D tensors (h, or (h, c) for LSTM), or None."""
        if hx is None:
            return None
        state = tuple(hx) if self.mode == "LSTM" else (hx,)
        if self.mode == "LSTM" and len(state) != 2:
            raise RuntimeError(f"LSTM: hx should be a tuple (h_0, c_0), got {len(state)} tensors")
        want = 3 if batched else 2
        if any(s.dim() != want for s in state):
            dims = ", ".join(f"{s.dim()}-D" for s in state)
            kind = "batched 3-D" if batched else "unbatched 2-D"
            raise RuntimeError(
                f"{self._name()}: for {kind} input, hx should also be {want}-D but got ({dims})"
            )
        return state if batched else tuple(s.unsqueeze(1) for s in state)

    def _check_state(self, state, batch):
        layers = self.num_layers * (2 if self.bidirectional else 1)
        for k, (s, size) in enumerate(zip(state, self._state_sizes())):
            expected = (layers, batch, size)
            if tuple(s.shape) != expected:
                which = f"hidden[{k}]" if self.mode == "LSTM" else "hidden"
                raise RuntimeError(
                    f"{self._name()}: Expected {which} size {expected}, got {list(s.shape)}"
                )

    def forward(self, input, hx=None):
        packed = isinstance(input, PackedSequence)
        if packed:
            data, batch_sizes_t, sorted_indices, unsorted_indices = input
            batch_sizes = [int(v) for v in batch_sizes_t.tolist()]
            self.check_input(data, batch_sizes)
            batch, batched = batch_sizes[0], True
            state = self._normalize_state(hx, True)
            if state is not None and sorted_indices is not None:
                state = tuple(flow.index_select(s, 1, sorted_indices) for s in state)
            x = data
        else:
            if input.dim() not in (2, 3):
                raise ValueError(
                    f"{self._name()}: Expected input to be 2D or 3D, got {input.dim()}D instead"
                )
            batched = input.dim() == 3
            state = self._normalize_state(hx, batched)
            if not batched:
                input = input.unsqueeze(0 if self.batch_first else 1)
            self.check_input(input, None)
            x = input.transpose(0, 1) if self.batch_first else input
            steps, batch = x.shape[0], x.shape[1]
            if steps == 0:
                raise RuntimeError(
                    f"{self._name()}: Expected sequence length to be larger than 0, got input "
                    f"of shape {tuple(input.shape)}"
                )
            batch_sizes = [batch] * steps
            x = x.reshape(steps * batch, self.input_size)
        if state is None:
            layers = self.num_layers * (2 if self.bidirectional else 1)
            state = tuple(
                flow.zeros(layers, batch, size, dtype=x.dtype, device=x.device)
                for size in self._state_sizes()
            )
        else:
            self._check_state(state, batch)
        output, final = self._layers(x, batch_sizes, state)
        if packed:
            if unsorted_indices is not None:
                final = tuple(flow.index_select(s, 1, unsorted_indices) for s in final)
            output = PackedSequence(output, batch_sizes_t, sorted_indices, unsorted_indices)
        else:
            output = output.reshape(len(batch_sizes), batch, output.shape[-1])
            if self.batch_first:
                output = output.transpose(0, 1)
            if not batched:
                output = output.squeeze(0 if self.batch_first else 1)
                final = tuple(s.squeeze(1) for s in final)
        return output, (final if self.mode == "LSTM" else final[0])

    def _layers(self, x, batch_sizes, state):
        directions = 2 if self.bidirectional else 1
        weights = self.all_weights
        uniform = all(size == batch_sizes[0] for size in batch_sizes)
        finals = [[] for _ in state]
        for layer in range(self.num_layers):
            if layer > 0 and self.dropout > 0 and self.training:
                x = F.dropout(x, self.dropout, True)
            first = layer * directions
            cells = [
                _Cell(self.mode, weights[first + d], self.bias, self.proj_size > 0)
                for d in range(directions)
            ]
            if directions == 2 and uniform and not _fused(cells[0], x, batch_sizes):
                initial = tuple(s.narrow(0, first, 2) for s in state)
                x, last = _run_both_directions(cells, x, len(batch_sizes), batch_sizes[0], initial)
                for k, s in enumerate(last):
                    finals[k].append(s)
                continue
            outs = []
            for d, cell in enumerate(cells):
                initial = tuple(s[first + d] for s in state)
                out, last = _run_direction(cell, x, batch_sizes, initial, reverse=d == 1)
                outs.append(out)
                for k, s in enumerate(last):
                    finals[k].append(s.unsqueeze(0))
            x = outs[0] if directions == 1 else flow.cat(outs, 1)
        return x, tuple(flow.cat(f, 0) for f in finals)


class RNN(RNNBase):
    """Elman RNN: h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), act tanh or relu."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(
                f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        super().__init__(mode, *args, **kwargs)


class LSTM(RNNBase):
    """LSTM (gate order i, f, g, o as torch), with an optional output projection (proj_size)."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """GRU (gate order r, z, n as torch; b_hn sits inside the reset gate)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias

        def param(*shape):
            return Parameter(_factory.empty(*shape, dtype=dtype, device=device))

        self.weight_ih = param(num_chunks * hidden_size, input_size)
        self.weight_hh = param(num_chunks * hidden_size, hidden_size)
        if bias:
            self.bias_ih = param(num_chunks * hidden_size)
            self.bias_hh = param(num_chunks * hidden_size)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _prepare(self, input, states):
        """Checks shapes; returns (2-D input, 2-D states, batched)."""
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(
                f"{name}: input has inconsistent input_size: got {input.shape[-1]} "
                f"expected {self.input_size}"
            )
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        batch = input.shape[0]
        out = []
        for k, s in enumerate(states):
            label = f"hx[{k}]" if len(states) > 1 else "hidden"
            if s is None:
                s = flow.zeros(batch, self.hidden_size, dtype=input.dtype, device=input.device)
            else:
                if s.dim() not in (1, 2):
                    raise ValueError(
                        f"{name}: Expected {label} to be 1D or 2D, got {s.dim()}D instead"
                    )
                if not batched:
                    s = s.unsqueeze(0)
                if tuple(s.shape) != (batch, self.hidden_size):
                    raise RuntimeError(
                        f"{name}: {label} has shape {tuple(s.shape)}, expected "
                        f"{(batch, self.hidden_size)}"
                    )
            out.append(s)
        return input, out, batched

    def _cell(self, mode):
        weights = [self.weight_ih, self.weight_hh]
        if self.bias:
            weights += [self.bias_ih, self.bias_hh]
        return _Cell(mode, weights, self.bias, False)


class RNNCell(RNNCellBase):
    def __init__(
        self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None
    ):
        super().__init__(input_size, hidden_size, bias, 1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"RNNCell: Unknown nonlinearity: {self.nonlinearity}")
        input, (h,), batched = self._prepare(input, [hx])
        cell = self._cell("RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU")
        (h,) = cell.step(cell.project(input), (h,))
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        input, (h, c), batched = self._prepare(input, [None, None] if hx is None else list(hx))
        cell = self._cell("LSTM")
        h, c = cell.step(cell.project(input), (h, c))
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        input, (h,), batched = self._prepare(input, [hx])
        cell = self._cell("GRU")
        (h,) = cell.step(cell.project(input), (h,))
        return h if batched else h.squeeze(0)
