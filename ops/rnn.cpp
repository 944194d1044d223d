// The fused LSTM and GRU layers: `_lstm_layer` / `_gru_layer` run one direction of one layer over
// a whole sequence, given its input projection (x @ W_ih^T + biases), and `*_backward` their
// gradients. nn.LSTM and nn.GRU (python/oneflowlike/nn/modules/rnn.py) call them for sequences of
// equal lengths; packed sequences of several lengths and projections run the per-step composite.
//
// Per time step the forward is one matmul (h @ W_hh^T) and one cell kernel (ops/rnn.h), the
// backward one cell kernel and one matmul (dgates @ W_hh); W_hh's gradient is then one GEMM over
// the whole sequence, not a sum of T small ones. Only the cell is per device: the loop over time
// calls the device's matmul kernel and cell kernel, so it is the same on the CPU and CUDA.
#include "ops/rnn.h"

#include "core/autograd/grad_mode.h"
#include "core/dispatcher.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/elementwise_grad.h"
#include "ops/elementwise_sbp.h"
#include "ops/index_ops.h"
#include "ops/join.h"
#include "ops/kernels.h"
#include "ops/linalg.h"
#include "ops/op_helpers.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"
#include "sbp/signature.h"

namespace ofl::internal {

OFL_DEFINE_KERNEL(lstm_cell_kernel, LstmCellKernel)
OFL_DEFINE_KERNEL(lstm_cell_backward_kernel, LstmCellBackwardKernel)
OFL_DEFINE_KERNEL(gru_cell_kernel, GruCellKernel)
OFL_DEFINE_KERNEL(gru_cell_backward_kernel, GruCellBackwardKernel)

namespace {

using elementwise_grad::k;
using elementwise_sbp::kB;
using elementwise_sbp::kPSum;

// Time step t of a contiguous (T, ...) tensor, as a view of (...).
Tensor step(const Tensor& x, int64_t t) {
  Shape rest(x.shape().begin() + 1, x.shape().end());
  return reshape_view(narrow_view(x, 0, t, 1), rest);
}

// The time steps in the order the recurrence visits them.
int64_t time_of(int64_t s, int64_t steps, bool reverse) {
  return reverse ? steps - 1 - s : s;
}

// Checks that every input after the first, named in `names` in the op's order, has the shape the
// first (T, B, gates * H) gives it: the states (B, H), weight_hh (gates * H, H), b_hn (H); and that
// all are float32 or all float64. Returns {T, B, H}.
Shape check_layer(const InferArgs& a, int64_t gates, std::initializer_list<const char*> names) {
  const TensorMeta& x = a.in[0];
  if (x.shape.size() != 3 || x.shape[2] % gates != 0)
    fail(a.op, "expects the input projection as (steps, batch, ", gates, " * hidden), got ",
         shape_str(x.shape));
  const int64_t batch = x.shape[1], hidden = x.shape[2] / gates;
  size_t i = 1;
  for (const char* name : names) {
    const TensorMeta& t = a.in[i++];
    const std::string_view n = name;
    const Shape want = n == "weight_hh" ? Shape{gates * hidden, hidden}
                       : n == "b_hn"    ? Shape{hidden}
                                        : Shape{batch, hidden};
    if (t.shape != want)
      fail(a.op, name, " is ", shape_str(t.shape), " where the input ", shape_str(x.shape),
           " needs ", shape_str(want));
  }
  if (x.dtype != DType::kFloat32 && x.dtype != DType::kFloat64)
    fail<TypeError>(a.op, "expects float32 or float64, got ", x.str());
  for (size_t j = 1; j < a.in.size(); ++j)
    if (a.in[j].dtype != x.dtype)
      fail<TypeError>(a.op, "expects every tensor in the input's dtype ", dtype_name(x.dtype),
                      ", got ", a.in[j].str());
  return {x.shape[0], batch, hidden};
}

// input (T, B, 4H), h0 and c0 (B, H), weight_hh (4H, H) -> output (T, B, H), h_n and c_n (B, H),
// and for the backward the activated gates (T, B, 4H) and the cells (T, B, H).
std::vector<TensorMeta> infer_lstm_layer(const InferArgs& a) {
  const Shape tbh = check_layer(a, 4, {"h0", "c0", "weight_hh"});
  const DType dt = a.in[0].dtype;
  const Device d = common_device(a);
  return {{tbh, dt, d},
          {{tbh[1], tbh[2]}, dt, d},
          {{tbh[1], tbh[2]}, dt, d},
          {a.in[0].shape, dt, d},
          {tbh, dt, d}};
}

void compute_lstm_layer(const ComputeArgs& c) {
  require_output_shapes(op_def("_lstm_layer"), c);
  const Tensor x = contiguous_local(c.in[0]), w_t = transpose(c.in[3], 0, 1);
  const Tensor &out = c.out[0], &act = c.out[3], &cells = c.out[4];
  const int64_t steps = x.size(0);
  const bool reverse = c.attrs.get<bool>("reverse");
  const DeviceType dev = out.device().type;
  auto matmul = matmul_kernel().get(dev);
  auto cell = lstm_cell_kernel().get(dev);
  const Tensor hh = Tensor::empty({x.size(1), x.size(2)}, x.dtype(), x.device());
  Tensor h = contiguous_local(c.in[1]), cprev = contiguous_local(c.in[2]);
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t t = time_of(s, steps, reverse);
    matmul(h, w_t, hh);
    cell(step(x, t), hh, cprev, step(out, t), step(cells, t), step(act, t));
    h = step(out, t);
    cprev = step(cells, t);
  }
  copy_into(c.out[1], h);
  copy_into(c.out[2], cprev);
}

// The h (or c) each step started from, (T, B, H): h0 at the first step visited, then the output
// of the step before.
Tensor previous(const Tensor& first, const Tensor& seq, bool reverse) {
  const int64_t steps = seq.size(0);
  const Tensor prev = Tensor::empty(seq.shape(), seq.dtype(), seq.device());
  if (steps == 0) return prev;
  copy_into(step(prev, reverse ? steps - 1 : 0), first);
  if (steps > 1)
    copy_into(narrow_view(prev, 0, reverse ? 0 : 1, steps - 1),
              narrow_view(seq, 0, reverse ? 1 : 0, steps - 1));
  return prev;
}

// Checks a backward op's inputs against the (T, B, H) its gates' workspace, input `ws` of shape
// (T, B, ws_gates * H), gives them; `kinds` names each input in order: 'S' a sequence (T, B, H),
// 's' a state (B, H), 'w' weight_hh (gates * H, H), 'g' the workspace. All in one floating dtype.
void check_backward(const InferArgs& a, size_t ws, int64_t gates, int64_t ws_gates,
                    std::string_view kinds) {
  const Shape& s = a.in[ws].shape;
  if (s.size() != 3 || s[2] % ws_gates != 0)
    fail(a.op, "expects the gates as (steps, batch, ", ws_gates, " * hidden), got ", shape_str(s));
  const int64_t steps = s[0], batch = s[1], hidden = s[2] / ws_gates;
  for (size_t i = 0; i < kinds.size(); ++i) {
    const Shape want = kinds[i] == 'S'   ? Shape{steps, batch, hidden}
                       : kinds[i] == 's' ? Shape{batch, hidden}
                       : kinds[i] == 'w' ? Shape{gates * hidden, hidden}
                                         : s;
    if (a.in[i].shape != want)
      fail(a.op, "input ", i, " is ", shape_str(a.in[i].shape), " where the gates ", shape_str(s),
           " need ", shape_str(want));
    if (a.in[i].dtype != a.in[0].dtype || !is_floating(a.in[i].dtype))
      fail<TypeError>(a.op, "expects every tensor in one floating dtype, got ", a.in[0].str(),
                      " and ", a.in[i].str());
  }
}

// dout (T, B, H), dh_n, dc_n, h0, c0, weight_hh, and the forward's output, gates and cells ->
// the gradients of the input projection, h0, c0 and weight_hh.
std::vector<TensorMeta> infer_lstm_layer_backward(const InferArgs& a) {
  check_backward(a, 7, 4, 4, "SsssswSgS");
  const TensorMeta &act = a.in[7], &h0 = a.in[3], &w = a.in[5];
  const Device d = common_device(a);
  return {{act.shape, act.dtype, d},
          {h0.shape, h0.dtype, d},
          {h0.shape, h0.dtype, d},
          {w.shape, w.dtype, d}};
}

void compute_lstm_layer_backward(const ComputeArgs& c) {
  require_output_shapes(op_def("_lstm_layer_backward"), c);
  const Tensor dout = contiguous_local(c.in[0]), w = contiguous_local(c.in[5]);
  const Tensor out = contiguous_local(c.in[6]), act = contiguous_local(c.in[7]);
  const Tensor cells = contiguous_local(c.in[8]);
  const Tensor &dgates = c.out[0], &dh = c.out[1], &dc = c.out[2];
  const int64_t steps = act.size(0), batch = act.size(1), hidden = w.size(1);
  const bool reverse = c.attrs.get<bool>("reverse");
  const DeviceType dev = dgates.device().type;
  auto matmul = matmul_kernel().get(dev);
  auto cell_backward = lstm_cell_backward_kernel().get(dev);
  // dh holds the gradient reaching h from the step after (the recurrence), dc that of c.
  copy_into(dh, c.in[1]);
  copy_into(dc, c.in[2]);
  const Tensor c_prev = previous(c.in[4], cells, reverse);
  for (int64_t s = steps - 1; s >= 0; --s) {
    const int64_t t = time_of(s, steps, reverse);
    cell_backward(step(dout, t), dh, dc, step(act, t), step(c_prev, t), step(cells, t),
                  step(dgates, t), dc);
    matmul(step(dgates, t), w, dh);
  }
  // dW_hh = sum over steps of dgates_t^T @ h_prev_t: one GEMM over (T * B) rows.
  if (steps * batch == 0) return fill_into(c.out[3], 0);
  const Tensor h_prev = previous(c.in[3], out, reverse);
  matmul(transpose(reshape_view(dgates, {steps * batch, 4 * hidden}), 0, 1),
         reshape_view(h_prev, {steps * batch, hidden}), c.out[3]);
}

// The gradient of output j, or zeros like `like` where the output took none.
Tensor grad_or_zeros(const BackwardArgs& b, size_t j, const Tensor& like) {
  return b.grads[j].defined() ? b.grads[j] : zeros_like(like);
}

// The gradient as ops, differentiable again (with create_graph): the forward recomputed as ops
// from the inputs, then the cell's derivative step by step.
std::vector<Tensor> lstm_grad_in_ops(const BackwardArgs& b) {
  const Tensor &x = b.in[0], &w = b.in[3];
  const Shape shape = meta_of(x).shape;  // logical, on global tensors
  const int64_t steps = shape[0], hidden = shape[2] / 4;
  if (steps == 0) return {zeros_like(x), b.grads[1], b.grads[2], zeros_like(w)};
  const bool reverse = b.attrs.get<bool>("reverse");
  struct Step {
    Tensor h_prev, c_prev, i, f, g, o, c;
  };
  std::vector<Step> saved(steps);
  Tensor h = b.in[1], cell = b.in[2];
  const Tensor w_t = transpose(w, 0, 1);
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t t = time_of(s, steps, reverse);
    const Tensor gates = add(select(x, 0, t), matmul(h, w_t));
    Step& st = saved[t];
    st.h_prev = h;
    st.c_prev = cell;
    st.i = sigmoid(narrow(gates, 1, 0, hidden));
    st.f = sigmoid(narrow(gates, 1, hidden, hidden));
    st.g = tanh(narrow(gates, 1, 2 * hidden, hidden));
    st.o = sigmoid(narrow(gates, 1, 3 * hidden, hidden));
    cell = add(mul(st.f, cell), mul(st.i, st.g));
    st.c = cell;
    h = mul(st.o, tanh(cell));
  }
  Tensor dh = grad_or_zeros(b, 1, b.in[1]), dc = grad_or_zeros(b, 2, b.in[2]);
  std::vector<Tensor> dgates(steps), h_prev(steps);
  const auto one_minus = [](const Tensor& v) { return sub(k(1), v); };
  for (int64_t s = steps - 1; s >= 0; --s) {
    const int64_t t = time_of(s, steps, reverse);
    const Step& st = saved[t];
    if (b.grads[0].defined()) dh = add(dh, select(b.grads[0], 0, t));
    const Tensor tc = tanh(st.c);
    const Tensor dcc = add(dc, mul(mul(dh, st.o), one_minus(mul(tc, tc))));
    dgates[t] = cat({mul(mul(dcc, st.g), mul(st.i, one_minus(st.i))),
                     mul(mul(dcc, st.c_prev), mul(st.f, one_minus(st.f))),
                     mul(mul(dcc, st.i), one_minus(mul(st.g, st.g))),
                     mul(mul(dh, tc), mul(st.o, one_minus(st.o)))},
                    1);
    dc = mul(dcc, st.f);
    dh = matmul(dgates[t], w);
    h_prev[t] = st.h_prev;
  }
  const Tensor dx = stack(dgates, 0);
  const int64_t rows = steps * shape[1];
  const Tensor dw = matmul(transpose(reshape(dx, {rows, 4 * hidden}), 0, 1),
                           reshape(stack(h_prev, 0), {rows, hidden}));
  return {dx, dh, dc, dw};
}

std::vector<Tensor> lstm_layer_backward(const BackwardArgs& b) {
  std::vector<Tensor> g;
  if (autograd::grad_enabled()) {
    g = lstm_grad_in_ops(b);
  } else {
    g = dispatch(
        op_def("_lstm_layer_backward"),
        {grad_or_zeros(b, 0, b.out[0]), grad_or_zeros(b, 1, b.in[1]), grad_or_zeros(b, 2, b.in[2]),
         b.in[1], b.in[2], b.in[3], b.out[0], b.out[3], b.out[4]},
        {{"reverse", b.attrs.get<bool>("reverse")}});
  }
  for (size_t i = 0; i < g.size(); ++i)
    if (!b.needs[i]) g[i] = Tensor();
  return g;
}

// --- the GRU layer ---

// input (T, B, 3H), h0 (B, H), weight_hh (3H, H), b_hn (H) -> output (T, B, H), h_n (B, H), and
// for the backward r, z, n and hn per step (T, B, 4H).
std::vector<TensorMeta> infer_gru_layer(const InferArgs& a) {
  const Shape tbh = check_layer(a, 3, {"h0", "weight_hh", "b_hn"});
  const DType dt = a.in[0].dtype;
  const Device d = common_device(a);
  return {{tbh, dt, d}, {{tbh[1], tbh[2]}, dt, d}, {{tbh[0], tbh[1], 4 * tbh[2]}, dt, d}};
}

void compute_gru_layer(const ComputeArgs& c) {
  require_output_shapes(op_def("_gru_layer"), c);
  const Tensor x = contiguous_local(c.in[0]), w_t = transpose(c.in[2], 0, 1);
  const Tensor b_hn = contiguous_local(c.in[3]);
  const Tensor &out = c.out[0], &ws = c.out[2];
  const int64_t steps = x.size(0);
  const bool reverse = c.attrs.get<bool>("reverse");
  const DeviceType dev = out.device().type;
  auto matmul = matmul_kernel().get(dev);
  auto cell = gru_cell_kernel().get(dev);
  const Tensor hh = Tensor::empty({x.size(1), x.size(2)}, x.dtype(), x.device());
  Tensor h = contiguous_local(c.in[1]);
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t t = time_of(s, steps, reverse);
    matmul(h, w_t, hh);
    cell(step(x, t), hh, b_hn, h, step(out, t), step(ws, t));
    h = step(out, t);
  }
  copy_into(c.out[1], h);
}

// dout (T, B, H), dh_n, h0, weight_hh, and the forward's output and r, z, n, hn -> the gradients
// of the input projection, h0, weight_hh and b_hn.
std::vector<TensorMeta> infer_gru_layer_backward(const InferArgs& a) {
  check_backward(a, 5, 3, 4, "SsswSg");
  const TensorMeta &h0 = a.in[2], &w = a.in[3], &ws = a.in[5];
  const Device d = common_device(a);
  const Shape& s = ws.shape;
  return {{{s[0], s[1], 3 * h0.shape[1]}, ws.dtype, d},
          {h0.shape, h0.dtype, d},
          {w.shape, w.dtype, d},
          {{h0.shape[1]}, w.dtype, d}};
}

void compute_gru_layer_backward(const ComputeArgs& c) {
  require_output_shapes(op_def("_gru_layer_backward"), c);
  const Tensor dout = contiguous_local(c.in[0]), w = contiguous_local(c.in[3]);
  const Tensor out = contiguous_local(c.in[4]), ws = contiguous_local(c.in[5]);
  const Tensor &dx = c.out[0], &dh0 = c.out[1];
  const int64_t steps = ws.size(0), batch = ws.size(1), hidden = w.size(1);
  const bool reverse = c.attrs.get<bool>("reverse");
  const DeviceType dev = dx.device().type;
  auto matmul = matmul_kernel().get(dev);
  auto cell_backward = gru_cell_backward_kernel().get(dev);
  // h's gradient from the step after comes in two parts: directly (dh_a, at first dh_n) and
  // through W_hh (dh_b); the kernel sums them with the output's.
  Tensor dh_a = Tensor::empty({batch, hidden}, ws.dtype(), ws.device());
  Tensor direct = Tensor::empty({batch, hidden}, ws.dtype(), ws.device());
  const Tensor dh_b = filled({batch, hidden}, ws.dtype(), ws.device(), 0);
  copy_into(dh_a, c.in[1]);
  const Tensor dhh = Tensor::empty({steps, batch, 3 * hidden}, ws.dtype(), ws.device());
  const Tensor h_prev = previous(c.in[2], out, reverse);
  for (int64_t s = steps - 1; s >= 0; --s) {
    const int64_t t = time_of(s, steps, reverse);
    cell_backward(step(dout, t), dh_a, dh_b, step(ws, t), step(h_prev, t), step(dx, t),
                  step(dhh, t), direct);
    matmul(step(dhh, t), w, dh_b);
    std::swap(dh_a, direct);
  }
  binary_kernel().get(dev)(BinaryOp::kAdd, dh_a, dh_b, dh0);
  const int64_t rows = steps * batch;
  if (rows == 0) {
    fill_into(c.out[2], 0);
    return fill_into(c.out[3], 0);
  }
  // dW_hh: one GEMM over (T * B) rows; b_hn's: the n part of dhh summed over them, as a GEMM
  // with a row of ones.
  const Tensor flat = reshape_view(dhh, {rows, 3 * hidden});
  matmul(transpose(flat, 0, 1), reshape_view(h_prev, {rows, hidden}), c.out[2]);
  matmul(filled({1, rows}, ws.dtype(), ws.device(), 1), narrow_view(flat, 1, 2 * hidden, hidden),
         reshape_view(c.out[3], {1, hidden}));
}

// The gradient as ops, differentiable again (with create_graph).
std::vector<Tensor> gru_grad_in_ops(const BackwardArgs& b) {
  const Tensor &x = b.in[0], &w = b.in[2], &b_hn = b.in[3];
  const Shape shape = meta_of(x).shape;  // logical, on global tensors
  const int64_t steps = shape[0], hidden = shape[2] / 3;
  if (steps == 0) return {zeros_like(x), b.grads[1], zeros_like(w), zeros_like(b_hn)};
  const bool reverse = b.attrs.get<bool>("reverse");
  struct Step {
    Tensor h_prev, r, z, n, hn;
  };
  std::vector<Step> saved(steps);
  Tensor h = b.in[1];
  const Tensor w_t = transpose(w, 0, 1);
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t t = time_of(s, steps, reverse);
    const Tensor xt = select(x, 0, t), hh = matmul(h, w_t);
    const auto part = [&](const Tensor& v, int64_t k) { return narrow(v, 1, k * hidden, hidden); };
    Step& st = saved[t];
    st.h_prev = h;
    st.r = sigmoid(add(part(xt, 0), part(hh, 0)));
    st.z = sigmoid(add(part(xt, 1), part(hh, 1)));
    st.hn = add(part(hh, 2), b_hn);
    st.n = tanh(add(part(xt, 2), mul(st.r, st.hn)));
    h = add(st.n, mul(st.z, sub(h, st.n)));
  }
  Tensor dh = grad_or_zeros(b, 1, b.in[1]);
  std::vector<Tensor> dxs(steps), dhhs(steps), h_prev(steps);
  const auto one_minus = [](const Tensor& v) { return sub(k(1), v); };
  for (int64_t s = steps - 1; s >= 0; --s) {
    const int64_t t = time_of(s, steps, reverse);
    const Step& st = saved[t];
    if (b.grads[0].defined()) dh = add(dh, select(b.grads[0], 0, t));
    const Tensor dn = mul(mul(dh, one_minus(st.z)), one_minus(mul(st.n, st.n)));
    const Tensor dz = mul(mul(dh, sub(st.h_prev, st.n)), mul(st.z, one_minus(st.z)));
    const Tensor dr = mul(mul(dn, st.hn), mul(st.r, one_minus(st.r)));
    dxs[t] = cat({dr, dz, dn}, 1);
    dhhs[t] = cat({dr, dz, mul(dn, st.r)}, 1);
    dh = add(mul(dh, st.z), matmul(dhhs[t], w));
    h_prev[t] = st.h_prev;
  }
  const int64_t rows = steps * shape[1];
  const Tensor dhh = reshape(stack(dhhs, 0), {rows, 3 * hidden});
  const Tensor dw = matmul(transpose(dhh, 0, 1), reshape(stack(h_prev, 0), {rows, hidden}));
  return {stack(dxs, 0), dh, dw, sum(narrow(dhh, 1, 2 * hidden, hidden), {0})};
}

std::vector<Tensor> gru_layer_backward(const BackwardArgs& b) {
  std::vector<Tensor> g;
  if (autograd::grad_enabled()) {
    g = gru_grad_in_ops(b);
  } else {
    g = dispatch(op_def("_gru_layer_backward"),
                 {grad_or_zeros(b, 0, b.out[0]), grad_or_zeros(b, 1, b.in[1]), b.in[1], b.in[2],
                  b.out[0], b.out[2]},
                 {{"reverse", b.attrs.get<bool>("reverse")}});
  }
  for (size_t i = 0; i < g.size(); ++i)
    if (!b.needs[i]) g[i] = Tensor();
  return g;
}

// The batch splits (the steps, the gates and the hidden units are one recurrence): the
// sequences' axis 1, the states' axis 0; W_hh broadcast, its gradient a partial sum. The
// backward is linear in the incoming gradients, so partial ones give partial results.
std::vector<SbpSignature> lstm_layer_sbp(const SbpQuery&) {
  const Sbp seq = Sbp::split(1), state = Sbp::split(0);
  return {{{seq, state, state, kB}, {seq, state, state, seq, seq}}};
}
std::vector<SbpSignature> lstm_layer_backward_sbp(const SbpQuery&) {
  const Sbp seq = Sbp::split(1), state = Sbp::split(0);
  return {{{seq, state, state, state, state, kB, seq, seq, seq}, {seq, state, state, kPSum}},
          {{kPSum, kPSum, kPSum, kB, kB, kB, kB, kB, kB}, {kPSum, kPSum, kPSum, kPSum}}};
}
std::vector<SbpSignature> gru_layer_sbp(const SbpQuery&) {
  const Sbp seq = Sbp::split(1), state = Sbp::split(0);
  return {{{seq, state, kB, kB}, {seq, state, seq}}};
}
std::vector<SbpSignature> gru_layer_backward_sbp(const SbpQuery&) {
  const Sbp seq = Sbp::split(1), state = Sbp::split(0);
  return {{{seq, state, state, kB, seq, seq}, {seq, state, kPSum, kPSum}},
          {{kPSum, kPSum, kB, kB, kB, kB}, {kPSum, kPSum, kPSum, kPSum}}};
}
const SbpRule kLstmLayer{"lstm_layer", lstm_layer_sbp};
const SbpRule kGruLayer{"gru_layer", gru_layer_sbp};
const SbpRule kGruLayerBackward{"gru_layer_backward", gru_layer_backward_sbp};
const SbpRule kLstmLayerBackward{"lstm_layer_backward", lstm_layer_backward_sbp};

// 2 T B G H flops for the recurrent matmuls (G gates of H), a few per gate element; the backward
// twice that. The output is (T, B, H) forward, the input projection's gradient backward.
OpCost rnn_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype) {
  OpCost cost = elementwise_cost(inputs, output, dtype);
  cost.flops += 2.0 * numel_of(output) * static_cast<double>(inputs[0][2]);
  return cost;
}
OpCost rnn_backward_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype) {
  OpCost cost = elementwise_cost(inputs, output, dtype);
  cost.flops += 4.0 * numel_of(output) * static_cast<double>(inputs[0][2]);
  return cost;
}

OFL_REGISTER_OPS({
    {.name = "_lstm_layer",
     .num_inputs = 4,
     .cost = rnn_cost,
     .sbp = &kLstmLayer,
     .attrs = {{"reverse", AttrType::kBool}},
     .infer = infer_lstm_layer,
     .compute = compute_lstm_layer,
     .backward = lstm_layer_backward,
     .saves = kSaveInputs | kSaveOutputs,
     .api = {{"_lstm_layer(Tensor input, Tensor h0, Tensor c0, Tensor weight_hh, bool "
              "reverse=False) -> (Tensor output, Tensor h_n, Tensor c_n, Tensor gates, Tensor "
              "cells)",
              nullptr, kInternal}},
     .doc = "One direction of an LSTM layer over a sequence, from its input projection (gates "
            "and cells are its backward's workspace: no gradient flows through them)"},
    {.name = "_lstm_layer_backward",
     .num_inputs = 9,
     .differentiable = false,
     .cost = rnn_backward_cost,
     .sbp = &kLstmLayerBackward,
     .attrs = {{"reverse", AttrType::kBool}},
     .infer = infer_lstm_layer_backward,
     .compute = compute_lstm_layer_backward,
     .doc = "The gradient of _lstm_layer (its backward)"},
    {.name = "_gru_layer",
     .num_inputs = 4,
     .cost = rnn_cost,
     .sbp = &kGruLayer,
     .attrs = {{"reverse", AttrType::kBool}},
     .infer = infer_gru_layer,
     .compute = compute_gru_layer,
     .backward = gru_layer_backward,
     .saves = kSaveInputs | kSaveOutputs,
     .api = {{"_gru_layer(Tensor input, Tensor h0, Tensor weight_hh, Tensor b_hn, bool "
              "reverse=False) -> (Tensor output, Tensor h_n, Tensor gates)",
              nullptr, kInternal}},
     .doc = "One direction of a GRU layer over a sequence, from its input projection (gates "
            "are its backward's workspace: no gradient flows through them)"},
    {.name = "_gru_layer_backward",
     .num_inputs = 6,
     .differentiable = false,
     .cost = rnn_backward_cost,
     .sbp = &kGruLayerBackward,
     .attrs = {{"reverse", AttrType::kBool}},
     .infer = infer_gru_layer_backward,
     .compute = compute_gru_layer_backward,
     .doc = "The gradient of _gru_layer (its backward)"},
});

}  // namespace
}  // namespace ofl::internal
