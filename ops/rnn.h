// The fused LSTM layer (ops/rnn.cpp): its recurrence runs as one op, a matmul and one cell
// kernel per time step, and its backward as one op whose weight gradient is a single GEMM over
// the whole sequence, as cuDNN's and oneDNN's RNN layers do. The cell kernels below are the
// per-device part (ops/cpu/rnn.cpp, ops/cuda/rnn.cu); the loop over time is the op's.
#pragma once
#include "core/kernel_table.h"
#include "core/tensor.h"
#include "ops/elementwise_math.h"

namespace ofl::internal {

// One time step over contiguous (batch, 4 * hidden) gate rows laid out [i, f, g, o]:
//   gates = xw + hh;  i, f, o = sigmoid;  g = tanh;  c_out = f * c + i * g;  h = o * tanh(c_out).
// act receives the activated gates (i, f, g, o), which the backward reads. c and c_out may be the
// same tensor.
using LstmCellKernel = void(const Tensor& xw, const Tensor& hh, const Tensor& c, const Tensor& h,
                            const Tensor& c_out, const Tensor& act);
// Its backward, given the gradient of h in two parts (the layer's output and the next step's
// recurrence: dh + dh_next) and of c_out (dc): the gradient of the pre-activation gates
// (dgates, (batch, 4 * hidden)) and of c (dc_prev; may be dc itself).
using LstmCellBackwardKernel = void(const Tensor& dh, const Tensor& dh_next, const Tensor& dc,
                                    const Tensor& act, const Tensor& c, const Tensor& c_out,
                                    const Tensor& dgates, const Tensor& dc_prev);

OFL_DECLARE_KERNEL(lstm_cell_kernel, LstmCellKernel)
OFL_DECLARE_KERNEL(lstm_cell_backward_kernel, LstmCellBackwardKernel)

// The cell's math on one hidden unit, shared by the backends; M is the type it computes in.
namespace lstm {

template <class M>
OFL_HOST_DEVICE inline M sigmoid(M x) {
  return M(1) / (M(1) + ew::exp(-x));
}

// Pre-activation gates (in place: activated) and c -> c_out; returns h.
template <class M>
OFL_HOST_DEVICE inline M cell(M& i, M& f, M& g, M& o, M c, M& c_out) {
  i = sigmoid(i);
  f = sigmoid(f);
  g = ew::tanh(g);
  o = sigmoid(o);
  c_out = f * c + i * g;
  return o * ew::tanh(c_out);
}

// From the activated gates (in place: the pre-activation gates' gradients), dh, dc (of c_out),
// c and c_out; returns the gradient of c.
template <class M>
OFL_HOST_DEVICE inline M cell_grad(M& i, M& f, M& g, M& o, M dh, M dc, M c, M c_out) {
  const M tc = ew::tanh(c_out);
  const M dcc = dc + dh * o * (M(1) - tc * tc);
  const M dc_prev = dcc * f;
  const M di = dcc * g * i * (M(1) - i), df = dcc * c * f * (M(1) - f);
  const M dg = dcc * i * (M(1) - g * g), d_o = dh * tc * o * (M(1) - o);
  i = di;
  f = df;
  g = dg;
  o = d_o;
  return dc_prev;
}

}  // namespace lstm

}  // namespace ofl::internal
