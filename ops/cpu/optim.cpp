// Adam's fused updates on the CPU: one pass over contiguous tensors, in float (double for
// float64), in the order the unfused ops round.
#include <cmath>

#include "core/parallel.h"
#include "ops/kernels.h"

namespace ofl::internal::cpu {
namespace {

void adam_moment(const Tensor& x, const Tensor& g, double decay, bool square) {
  dispatch_floating(x.dtype(), "adam_moment_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    T* xp = x.data<T>();
    const T* gp = g.data<T>();
    const M a = M(decay), b = M(1 - decay);
    parallel_for(x.numel(), kGrainSize, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const M gi = M(gp[i]);
        xp[i] = static_cast<T>(a * M(xp[i]) + b * (square ? gi * gi : gi));
      }
    });
  });
}

void adam_step(const Tensor& param, const Tensor& m, const Tensor& v, double decay,
               double step_size, double bias2_sqrt, double eps) {
  dispatch_floating(param.dtype(), "adam_step_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    T* p = param.data<T>();
    const T *mp = m.data<T>(), *vp = v.data<T>();
    const M d = M(decay), step = M(-step_size), bias = M(bias2_sqrt), e = M(eps);
    parallel_for(param.numel(), kGrainSize, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        p[i] = static_cast<T>(M(p[i]) * d + M(mp[i]) / (std::sqrt(M(vp[i])) / bias + e) * step);
    });
  });
}

}  // namespace

OFL_REGISTER_KERNEL(adam_moment_kernel, DeviceType::kCPU, adam_moment);
OFL_REGISTER_KERNEL(adam_step_kernel, DeviceType::kCPU, adam_step);

}  // namespace ofl::internal::cpu
