// max_pool2d and avg_pool2d over contiguous (N, C, H, W), parallel over the N * C planes.
// Backward kernels write each plane's gradient on its own, so no two tasks touch one element.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

#include "core/parallel.h"
#include "ops/kernels.h"

namespace ofl::internal::cpu {
namespace {

struct Planes {
  int64_t P, H, W, Ho, Wo;
};

Planes planes(const Shape& in, const Shape& out) {
  return {in[0] * in[1], in[2], in[3], out[2], out[3]};
}

int64_t grain_for(const Planes& p, const Window2d& win) {
  return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(p.Ho * p.Wo * win.kh * win.kw, 1));
}

// The window of output (oh, ow) clipped to the image: rows [h0, h1), columns [w0, w1); also
// its size clipped only to the padded image, which count_include_pad divides by.
struct Span {
  int64_t h0, h1, w0, w1, padded;
};

Span span(const Planes& p, const Window2d& win, int64_t oh, int64_t ow) {
  int64_t h0 = oh * win.sh - win.ph, w0 = ow * win.sw - win.pw;
  int64_t h1 = std::min(h0 + win.kh, p.H + win.ph), w1 = std::min(w0 + win.kw, p.W + win.pw);
  const int64_t padded = (h1 - h0) * (w1 - w0);
  return {std::max<int64_t>(h0, 0), std::min(h1, p.H), std::max<int64_t>(w0, 0), std::min(w1, p.W),
          padded};
}

template <class T>
void max_pool(const Tensor& x, const Window2d& win, const Tensor& out, const Tensor& indices) {
  const Planes p = planes(x.shape(), out.shape());
  const T* xp = x.data<T>();
  T* op = out.data<T>();
  int64_t* ip = indices.data<int64_t>();
  parallel_for(p.P, grain_for(p, win), [&](int64_t lo, int64_t hi) {
    for (int64_t q = lo; q < hi; ++q) {
      const T* plane = xp + q * p.H * p.W;
      for (int64_t oh = 0; oh < p.Ho; ++oh)
        for (int64_t ow = 0; ow < p.Wo; ++ow) {
          const int64_t h0 = oh * win.sh - win.ph, w0 = ow * win.sw - win.pw;
          T best = -std::numeric_limits<T>::infinity();
          int64_t arg = -1;
          for (int64_t i = 0; i < win.kh; ++i) {
            const int64_t ih = h0 + i * win.dh;
            if (ih < 0 || ih >= p.H) continue;
            for (int64_t j = 0; j < win.kw; ++j) {
              const int64_t iw = w0 + j * win.dw;
              if (iw < 0 || iw >= p.W) continue;
              const T v = plane[ih * p.W + iw];
              // NaN propagates; the first in-image element wins when all are -inf.
              if (arg < 0 || v > best || std::isnan(v)) {
                best = v;
                arg = ih * p.W + iw;
              }
            }
          }
          const int64_t o = (q * p.Ho + oh) * p.Wo + ow;
          op[o] = best;
          ip[o] = arg;
        }
    }
  });
}

template <class T>
void max_pool_backward(const Tensor& grad, const Tensor& indices, const Tensor& gx) {
  const Planes p = planes(gx.shape(), grad.shape());
  const T* gp = grad.data<T>();
  const int64_t* ip = indices.data<int64_t>();
  T* gxp = gx.data<T>();
  const int64_t in_plane = p.H * p.W, out_plane = p.Ho * p.Wo;
  std::atomic<bool> out_of_plane{false};  // indices are an op input: never write past a plane
  parallel_for(p.P, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(in_plane, 1)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t q = lo; q < hi; ++q) {
                   T* plane = gxp + q * in_plane;
                   std::fill(plane, plane + in_plane, T(0));
                   for (int64_t o = q * out_plane; o < (q + 1) * out_plane; ++o) {
                     if (static_cast<uint64_t>(ip[o]) >= static_cast<uint64_t>(in_plane)) {
                       out_of_plane = true;
                       continue;
                     }
                     plane[ip[o]] += gp[o];
                   }
                 }
               });
  if (out_of_plane)
    fail("max_pool2d_backward", "indices must lie in [0, ", in_plane, ") for an input of ",
         shape_str(gx.shape()));
}

template <class T>
void avg_pool(const Tensor& x, const Window2d& win, bool count_include_pad, const Tensor& out) {
  const Planes p = planes(x.shape(), out.shape());
  const T* xp = x.data<T>();
  T* op = out.data<T>();
  parallel_for(p.P, grain_for(p, win), [&](int64_t lo, int64_t hi) {
    for (int64_t q = lo; q < hi; ++q) {
      const T* plane = xp + q * p.H * p.W;
      for (int64_t oh = 0; oh < p.Ho; ++oh)
        for (int64_t ow = 0; ow < p.Wo; ++ow) {
          const Span s = span(p, win, oh, ow);
          T acc = 0;
          for (int64_t ih = s.h0; ih < s.h1; ++ih)
            for (int64_t iw = s.w0; iw < s.w1; ++iw) acc += plane[ih * p.W + iw];
          const int64_t div = count_include_pad ? s.padded : (s.h1 - s.h0) * (s.w1 - s.w0);
          op[(q * p.Ho + oh) * p.Wo + ow] = acc / static_cast<T>(div);
        }
    }
  });
}

template <class T>
void avg_pool_backward(const Tensor& grad, const Window2d& win, bool count_include_pad,
                       const Tensor& gx) {
  const Planes p = planes(gx.shape(), grad.shape());
  const T* gp = grad.data<T>();
  T* gxp = gx.data<T>();
  parallel_for(p.P, grain_for(p, win), [&](int64_t lo, int64_t hi) {
    for (int64_t q = lo; q < hi; ++q) {
      T* plane = gxp + q * p.H * p.W;
      std::fill(plane, plane + p.H * p.W, T(0));
      for (int64_t oh = 0; oh < p.Ho; ++oh)
        for (int64_t ow = 0; ow < p.Wo; ++ow) {
          const Span s = span(p, win, oh, ow);
          const int64_t div = count_include_pad ? s.padded : (s.h1 - s.h0) * (s.w1 - s.w0);
          const T v = gp[(q * p.Ho + oh) * p.Wo + ow] / static_cast<T>(div);
          for (int64_t ih = s.h0; ih < s.h1; ++ih)
            for (int64_t iw = s.w0; iw < s.w1; ++iw) plane[ih * p.W + iw] += v;
        }
    }
  });
}

template <class F>
void dispatch_pool(DType t, const char* op, F&& f) {
  if (t == DType::kFloat32) return f(TypeTag<float>{});
  if (t == DType::kFloat64) return f(TypeTag<double>{});
  fail<TypeError>(op, "CPU kernel computes in float32 or float64, got ", dtype_name(t));
}

void max_pool2d(const Tensor& x, const Window2d& win, const Tensor& out, const Tensor& indices) {
  dispatch_pool(x.dtype(), "max_pool2d",
                [&](auto tag) { max_pool<typename decltype(tag)::type>(x, win, out, indices); });
}

void max_pool2d_bw(const Tensor& grad, const Tensor& indices, const Tensor& gx) {
  dispatch_pool(grad.dtype(), "max_pool2d_backward", [&](auto tag) {
    max_pool_backward<typename decltype(tag)::type>(grad, indices, gx);
  });
}

void avg_pool2d(const Tensor& x, const Window2d& win, bool count_include_pad, const Tensor& out) {
  dispatch_pool(x.dtype(), "avg_pool2d", [&](auto tag) {
    avg_pool<typename decltype(tag)::type>(x, win, count_include_pad, out);
  });
}

void avg_pool2d_bw(const Tensor& grad, const Window2d& win, bool count_include_pad,
                   const Tensor& gx) {
  dispatch_pool(grad.dtype(), "avg_pool2d_backward", [&](auto tag) {
    avg_pool_backward<typename decltype(tag)::type>(grad, win, count_include_pad, gx);
  });
}

}  // namespace

OFL_REGISTER_KERNEL(max_pool2d_kernel, DeviceType::kCPU, max_pool2d);
OFL_REGISTER_KERNEL(max_pool2d_backward_kernel, DeviceType::kCPU, max_pool2d_bw);
OFL_REGISTER_KERNEL(avg_pool2d_kernel, DeviceType::kCPU, avg_pool2d);
OFL_REGISTER_KERNEL(avg_pool2d_backward_kernel, DeviceType::kCPU, avg_pool2d_bw);

}  // namespace ofl::internal::cpu
