// Philox fills: element i (in logical row-major order) uses counter offset + i.
#include <cmath>
#include <type_traits>

#include "core/parallel.h"
#include "core/random.h"
#include "ops/kernels.h"

namespace ofl::cpu {
namespace {

// Mantissa bits of T: a uniform draw is cut to this many bits, as PyTorch does, so it stays
// below 1 after the conversion to T (rounding 1 - 2^-12 to float16 would give 1.0).
template <class T>
constexpr int uniform_bits() {
  if constexpr (std::is_same_v<T, Half>) return 11;
  if constexpr (std::is_same_v<T, BFloat16>) return 8;
  if constexpr (std::is_same_v<T, float>) return 24;
  return 53;
}

void random_fill(const Tensor& out, int kind, double a, double b, uint64_t seed, uint64_t offset) {
  OFL_CHECK(out.is_contiguous(), "random fill needs a contiguous tensor");
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out.data<T>();
    parallel_for(out.numel(), 4096, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        uint64_t c = offset + static_cast<uint64_t>(i);
        double v;
        if (kind == 0) {
          double u = philox_uniform(c, seed);
          if constexpr (uniform_bits<T>() < 53)
            u = std::ldexp(std::floor(std::ldexp(u, uniform_bits<T>())), -uniform_bits<T>());
          v = a + (b - a) * u;
        } else if (kind == 1) {
          v = a + b * philox_normal(c, seed);
        } else {
          double span = b - a;
          v = a + std::floor(philox_uniform(c, seed) * span);
          if (v >= b) v = b - 1;
        }
        p[i] = static_cast<T>(static_cast<opmath_t<T>>(v));
      }
    });
  });
}

}  // namespace

OFL_REGISTER_KERNEL(random_kernel, DeviceType::kCPU, random_fill);

}  // namespace ofl::cpu
