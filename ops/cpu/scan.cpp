// CPU kernels for cumsum and tril / triu (contiguous operands).
#include "core/parallel.h"
#include "ops/kernels.h"

namespace ofl::internal::cpu {
namespace {

void cumsum(const Tensor& x, int64_t outer, int64_t n, int64_t inner, bool reverse,
            const Tensor& out) {
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = std::conditional_t<std::is_same_v<T, bool>, int64_t, opmath_t<T>>;
    const T* in = x.data<T>();
    T* o = out.data<T>();
    const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n, 1));
    parallel_for(outer * inner, grain, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t base = (t / inner) * n * inner + t % inner;
        M acc = M(0);
        for (int64_t j = 0; j < n; ++j) {
          const int64_t at = base + (reverse ? n - 1 - j : j) * inner;
          acc = acc + M(in[at]);
          o[at] = static_cast<T>(acc);
        }
      }
    });
  });
}

void triangular(const Tensor& x, bool upper, int64_t diagonal, const Tensor& out) {
  const int64_t rows = x.shape()[x.dim() - 2], cols = x.shape()[x.dim() - 1];
  const int64_t batch = rows * cols != 0 ? x.numel() / (rows * cols) : 0;
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* o = out.data<T>();
    parallel_for(batch * rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(cols, 1)),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t r = begin; r < end; ++r) {
                     const int64_t i = r % rows;
                     for (int64_t j = 0; j < cols; ++j) {
                       const bool keep = upper ? j - i >= diagonal : j - i <= diagonal;
                       o[r * cols + j] = keep ? in[r * cols + j] : T(0);
                     }
                   }
                 });
  });
}

}  // namespace

OFL_REGISTER_KERNEL(cumsum_kernel, DeviceType::kCPU, cumsum);
OFL_REGISTER_KERNEL(triangular_kernel, DeviceType::kCPU, triangular);

}  // namespace ofl::internal::cpu
