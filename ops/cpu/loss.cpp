// Negative log-likelihood at integer targets, and its adjoint. The targets are checked here, on
// the data, so front ends, meta tensors and tracing never read them.
#include <algorithm>

#include "core/parallel.h"
#include "ops/kernels.h"

namespace ofl::internal::cpu {
namespace {

// Raises naming the first target outside [0, total) that is not ignore_index.
void check_targets(const Tensor& target, int64_t total, int64_t ignore_index) {
  const int64_t* t = target.data<int64_t>();
  for (int64_t i = 0; i < target.numel(); ++i)
    if (t[i] != ignore_index && (t[i] < 0 || t[i] >= total))
      fail<IndexError>("nll_loss", "target ", t[i], " is out of bounds for ", total,
                       " classes (ignore_index is ", ignore_index, ")");
}

// Where target t lies in the view's classes, or -1 (ignored, or another shard's class).
inline int64_t local_class(int64_t t, const ClassView& v, int64_t ignore_index) {
  const int64_t c = t - v.first;
  return t == ignore_index || c < 0 || c >= v.classes ? -1 : c;
}

void nll_loss(const Tensor& x, const Tensor& target, const ClassView& v, int64_t ignore_index,
              const Tensor& out) {
  check_targets(target, v.total, ignore_index);
  const int64_t* t = target.data<int64_t>();
  const int64_t classes = v.classes, inner = v.inner;
  dispatch_floating(x.dtype(), "nll_loss", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const T* xp = x.data<T>();
    T* o = out.data<T>();
    parallel_for(v.outer * inner, kGrainSize, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        const int64_t n = k / inner, i = k % inner, c = local_class(t[k], v, ignore_index);
        o[k] = c < 0 ? T(0) : static_cast<T>(-M(xp[(n * classes + c) * inner + i]));
      }
    });
  });
}

void nll_loss_backward(const Tensor& grad, const Tensor& target, const ClassView& v,
                       int64_t ignore_index, const Tensor& gx) {
  check_targets(target, v.total, ignore_index);
  const int64_t* t = target.data<int64_t>();
  const int64_t classes = v.classes, inner = v.inner;
  dispatch_floating(gx.dtype(), "nll_loss_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const T* g = grad.data<T>();
    T* o = gx.data<T>();
    std::fill(o, o + gx.numel(), T(0));
    parallel_for(v.outer * inner, kGrainSize, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        const int64_t n = k / inner, i = k % inner, c = local_class(t[k], v, ignore_index);
        if (c >= 0) o[(n * classes + c) * inner + i] = static_cast<T>(-M(g[k]));
      }
    });
  });
}

}  // namespace

OFL_REGISTER_KERNEL(nll_loss_kernel, DeviceType::kCPU, nll_loss);
OFL_REGISTER_KERNEL(nll_loss_backward_kernel, DeviceType::kCPU, nll_loss_backward);

}  // namespace ofl::internal::cpu
