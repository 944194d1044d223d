// CPU sort kernel for sort, argsort and topk: each lane of [outer, n, inner] sorted on its own.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ops/kernels.h"

namespace ofl::internal::cpu {
namespace {

template <class M>
bool is_nan(M v) {
  if constexpr (std::is_floating_point_v<M>)
    return std::isnan(v);
  else
    return false;
}

void sort_lanes(const Tensor& x, int64_t outer, int64_t n, int64_t inner, int64_t k,
                bool descending, const Tensor& values, const Tensor& indices) {
  dispatch_all(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const T* in = x.data<T>();
    T* vout = values.defined() ? values.data<T>() : nullptr;
    int64_t* iout = indices.data<int64_t>();
    // NaN sorts as the greatest value (PyTorch's order); ties keep index order (stable).
    auto before = [descending](M a, int64_t ia, M b, int64_t ib) {
      const bool na = is_nan(a), nb = is_nan(b);
      if (na || nb) {
        if (na && nb) return ia < ib;
        return descending ? na : nb;
      }
      if (a != b) return descending ? a > b : a < b;
      return ia < ib;
    };
    const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n, 1));
    parallel_for(outer * inner, grain, [&](int64_t begin, int64_t end) {
      std::vector<M> lane(n);
      std::vector<int64_t> order(n);
      for (int64_t t = begin; t < end; ++t) {
        const int64_t o = t / inner, i = t % inner;
        const T* src = in + o * n * inner + i;
        for (int64_t j = 0; j < n; ++j) lane[j] = static_cast<M>(src[j * inner]);
        std::iota(order.begin(), order.end(), int64_t{0});
        auto cmp = [&](int64_t a, int64_t b) { return before(lane[a], a, lane[b], b); };
        if (k < n)
          std::partial_sort(order.begin(), order.begin() + k, order.end(), cmp);
        else
          std::sort(order.begin(), order.end(), cmp);
        const int64_t base = o * k * inner + i;
        for (int64_t j = 0; j < k; ++j) {
          iout[base + j * inner] = order[j];
          if (vout) vout[base + j * inner] = src[order[j] * inner];
        }
      }
    });
  });
}

}  // namespace

OFL_REGISTER_KERNEL(sort_kernel, DeviceType::kCPU, sort_lanes);

}  // namespace ofl::internal::cpu
