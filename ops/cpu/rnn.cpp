// The fused LSTM and GRU cells' kernels (ops/rnn.h): one pass over a time step's gate rows.
#include <algorithm>

#include "core/parallel.h"
#include "ops/cpu/vector_math.h"
#include "ops/rnn.h"

namespace ofl::internal::cpu {
namespace {

// Calls row(r) for each of `rows` rows of `hidden` units (a time step's batch), over the threads.
template <class F>
void for_rows(int64_t rows, int64_t hidden, F&& row) {
  parallel_for(rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, 8 * hidden)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t r = lo; r < hi; ++r) row(r);
               });
}

template <class T>
void cell_typed(const Tensor& xw, const Tensor& hh, const Tensor& c, const Tensor& h,
                const Tensor& c_out, const Tensor& act) {
  using M = opmath_t<T>;
  const int64_t hidden = h.size(1);
  const T *xp = xw.data<T>(), *hp = hh.data<T>(), *cp = c.data<T>();
  T *yp = h.data<T>(), *cop = c_out.data<T>(), *ap = act.data<T>();
  for_rows(h.size(0), hidden, [&](int64_t r) {
    const T *x = xp + r * 4 * hidden, *hr = hp + r * 4 * hidden;
    const T* cr = cp + r * hidden;
    T *a = ap + r * 4 * hidden, *y = yp + r * hidden, *co = cop + r * hidden;
#pragma omp simd
    for (int64_t j = 0; j < hidden; ++j) {
      M i = M(x[j]) + M(hr[j]), f = M(x[hidden + j]) + M(hr[hidden + j]);
      M g = M(x[2 * hidden + j]) + M(hr[2 * hidden + j]);
      M o = M(x[3 * hidden + j]) + M(hr[3 * hidden + j]);
      M cn;
      const M out = lstm::cell(i, f, g, o, M(cr[j]), cn);
      a[j] = T(i), a[hidden + j] = T(f), a[2 * hidden + j] = T(g);
      a[3 * hidden + j] = T(o);
      co[j] = T(cn);
      y[j] = T(out);
    }
  });
}

template <class T>
void cell_backward_typed(const Tensor& dh, const Tensor& dh_next, const Tensor& dc,
                         const Tensor& act, const Tensor& c, const Tensor& c_out,
                         const Tensor& dgates, const Tensor& dc_prev) {
  using M = opmath_t<T>;
  const int64_t hidden = c.size(1);
  const T *dhp = dh.data<T>(), *dnp = dh_next.data<T>(), *dcp = dc.data<T>();
  const T *ap = act.data<T>(), *cp = c.data<T>(), *cop = c_out.data<T>();
  T *gp = dgates.data<T>(), *dpp = dc_prev.data<T>();
  for_rows(c.size(0), hidden, [&](int64_t r) {
    const int64_t row = r * hidden;
    const T* a = ap + 4 * row;
    T* dg = gp + 4 * row;
#pragma omp simd
    for (int64_t j = 0; j < hidden; ++j) {
      M i = M(a[j]), f = M(a[hidden + j]), g = M(a[2 * hidden + j]);
      M o = M(a[3 * hidden + j]);
      const M d = M(dhp[row + j]) + M(dnp[row + j]);
      const M dprev =
          lstm::cell_grad(i, f, g, o, d, M(dcp[row + j]), M(cp[row + j]), M(cop[row + j]));
      dg[j] = T(i), dg[hidden + j] = T(f), dg[2 * hidden + j] = T(g);
      dg[3 * hidden + j] = T(o);
      dpp[row + j] = T(dprev);
    }
  });
}

template <class T>
void gru_cell_typed(const Tensor& xw, const Tensor& hh, const Tensor& b_hn, const Tensor& h,
                    const Tensor& h_out, const Tensor& ws) {
  using M = opmath_t<T>;
  const int64_t hidden = h.size(1);
  const T *xp = xw.data<T>(), *hp = hh.data<T>(), *bp = b_hn.data<T>(), *prev = h.data<T>();
  T *yp = h_out.data<T>(), *wp = ws.data<T>();
  for_rows(h.size(0), hidden, [&](int64_t r) {
    const T *x = xp + r * 3 * hidden, *hr = hp + r * 3 * hidden;
    const T* hprev = prev + r * hidden;
    T *w = wp + r * 4 * hidden, *y = yp + r * hidden;
#pragma omp simd
    for (int64_t j = 0; j < hidden; ++j) {
      M rg = M(x[j]) + M(hr[j]), zg = M(x[hidden + j]) + M(hr[hidden + j]);
      const M hn = M(hr[2 * hidden + j]) + M(bp[j]);
      M n;
      const M out = gru::cell(rg, zg, M(x[2 * hidden + j]), hn, n, M(hprev[j]));
      w[j] = T(rg), w[hidden + j] = T(zg), w[2 * hidden + j] = T(n);
      w[3 * hidden + j] = T(hn);
      y[j] = T(out);
    }
  });
}

template <class T>
void gru_cell_backward_typed(const Tensor& dh, const Tensor& dh_a, const Tensor& dh_b,
                             const Tensor& ws, const Tensor& h, const Tensor& dxw,
                             const Tensor& dhh, const Tensor& dh_direct) {
  using M = opmath_t<T>;
  const int64_t hidden = h.size(1);
  const T *dp = dh.data<T>(), *ap = dh_a.data<T>(), *bp = dh_b.data<T>();
  const T *wp = ws.data<T>(), *hp = h.data<T>();
  T *dxp = dxw.data<T>(), *dhp = dhh.data<T>(), *ddp = dh_direct.data<T>();
  for_rows(h.size(0), hidden, [&](int64_t r) {
    const int64_t row = r * hidden;
    const T* w = wp + 4 * row;
    T *gx = dxp + 3 * row, *gh = dhp + 3 * row;
#pragma omp simd
    for (int64_t j = 0; j < hidden; ++j) {
      const M d = M(dp[row + j]) + M(ap[row + j]) + M(bp[row + j]);
      M dr, dz, dn, dhn;
      const M direct = gru::cell_grad(M(w[j]), M(w[hidden + j]), M(w[2 * hidden + j]),
                                      M(w[3 * hidden + j]), M(hp[row + j]), d, dr, dz, dn, dhn);
      gx[j] = T(dr), gx[hidden + j] = T(dz), gx[2 * hidden + j] = T(dn);
      gh[j] = T(dr), gh[hidden + j] = T(dz), gh[2 * hidden + j] = T(dhn);
      ddp[row + j] = T(direct);
    }
  });
}

void lstm_cell(const Tensor& xw, const Tensor& hh, const Tensor& c, const Tensor& h,
               const Tensor& c_out, const Tensor& act) {
  dispatch_floating(h.dtype(), "_lstm_layer", [&](auto tag) {
    cell_typed<typename decltype(tag)::type>(xw, hh, c, h, c_out, act);
  });
}

void lstm_cell_backward(const Tensor& dh, const Tensor& dh_next, const Tensor& dc,
                        const Tensor& act, const Tensor& c, const Tensor& c_out,
                        const Tensor& dgates, const Tensor& dc_prev) {
  dispatch_floating(c.dtype(), "_lstm_layer_backward", [&](auto tag) {
    cell_backward_typed<typename decltype(tag)::type>(dh, dh_next, dc, act, c, c_out, dgates,
                                                      dc_prev);
  });
}

void gru_cell(const Tensor& xw, const Tensor& hh, const Tensor& b_hn, const Tensor& h,
              const Tensor& h_out, const Tensor& ws) {
  dispatch_floating(h.dtype(), "_gru_layer", [&](auto tag) {
    gru_cell_typed<typename decltype(tag)::type>(xw, hh, b_hn, h, h_out, ws);
  });
}

void gru_cell_backward(const Tensor& dh, const Tensor& dh_a, const Tensor& dh_b, const Tensor& ws,
                       const Tensor& h, const Tensor& dxw, const Tensor& dhh,
                       const Tensor& dh_direct) {
  dispatch_floating(h.dtype(), "_gru_layer_backward", [&](auto tag) {
    gru_cell_backward_typed<typename decltype(tag)::type>(dh, dh_a, dh_b, ws, h, dxw, dhh,
                                                          dh_direct);
  });
}

}  // namespace

OFL_REGISTER_KERNEL(gru_cell_kernel, DeviceType::kCPU, gru_cell);
OFL_REGISTER_KERNEL(gru_cell_backward_kernel, DeviceType::kCPU, gru_cell_backward);
OFL_REGISTER_KERNEL(lstm_cell_kernel, DeviceType::kCPU, lstm_cell);
OFL_REGISTER_KERNEL(lstm_cell_backward_kernel, DeviceType::kCPU, lstm_cell_backward);

}  // namespace ofl::internal::cpu
