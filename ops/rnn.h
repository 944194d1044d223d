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

// A GRU step over (batch, 3 * hidden) rows [r, z, n] (PyTorch's order): xw is the input
// projection with b_ih and the r, z parts of b_hh folded in, hh = h @ W_hh^T, b_hn the n part of
// b_hh (hidden):
//   r, z = sigmoid(xw + hh);  hn = hh_n + b_hn;  n = tanh(xw_n + r * hn);  h_out = n + z (h - n).
// ws (batch, 4 * hidden) receives r, z, n and hn for the backward.
using GruCellKernel = void(const Tensor& xw, const Tensor& hh, const Tensor& b_hn, const Tensor& h,
                           const Tensor& h_out, const Tensor& ws);
// Its backward, given h_out's gradient in three parts (dh + dh_a + dh_b: the output's and the two
// paths from the step after): the gradients of xw (dxw) and of hh (dhh, whose n part is also
// b_hn's), and the part of h's gradient that does not pass through W_hh (dh_direct).
using GruCellBackwardKernel = void(const Tensor& dh, const Tensor& dh_a, const Tensor& dh_b,
                                   const Tensor& ws, const Tensor& h, const Tensor& dxw,
                                   const Tensor& dhh, const Tensor& dh_direct);

OFL_DECLARE_KERNEL(lstm_cell_kernel, LstmCellKernel)
OFL_DECLARE_KERNEL(lstm_cell_backward_kernel, LstmCellBackwardKernel)
OFL_DECLARE_KERNEL(gru_cell_kernel, GruCellKernel)
OFL_DECLARE_KERNEL(gru_cell_backward_kernel, GruCellBackwardKernel)

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

namespace gru {

// Pre-activation r, z (in place: activated), n's input part xn and hn -> n (in n); returns h_out.
template <class M>
OFL_HOST_DEVICE inline M cell(M& r, M& z, M xn, M hn, M& n, M h) {
  r = lstm::sigmoid(r);
  z = lstm::sigmoid(z);
  n = ew::tanh(xn + r * hn);
  return n + z * (h - n);
}

// From r, z, n, hn, h and h_out's gradient d: the gradients of the pre-activation r, z and n (dr,
// dz, dn: xw's), of hn (dhn) and the direct part of h's; returns the latter.
template <class M>
OFL_HOST_DEVICE inline M cell_grad(M r, M z, M n, M hn, M h, M d, M& dr, M& dz, M& dn, M& dhn) {
  dn = d * (M(1) - z) * (M(1) - n * n);
  dz = d * (h - n) * z * (M(1) - z);
  dhn = dn * r;
  dr = dn * hn * r * (M(1) - r);
  return d * z;
}

}  // namespace gru

}  // namespace ofl::internal
