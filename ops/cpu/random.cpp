// Philox fills: element i (in logical row-major order) uses counter offset + i, also when the
// tensor is one block (a shard) of the logical tensor.
#include <cmath>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "core/random.h"
#include "ops/kernels.h"

namespace ofl::internal::cpu {
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

// The counter of each element of a block of `block.logical`, by its row-major index there.
class BlockCounters {
 public:
  BlockCounters(const Shape& shape, const RandomBlock& block, uint64_t offset) : offset_(offset) {
    if (block.logical.empty()) return;
    const size_t n = shape.size();
    OFL_CHECK(block.logical.size() == n && block.start.size() == n, "random block of ",
              shape_str(block.logical), " from ", shape_str(block.start), " for ",
              shape_str(shape));
    shape_ = shape;
    strides_.assign(n, 1);
    for (size_t d = n; d-- > 1;) strides_[d - 1] = strides_[d] * block.logical[d];
    for (size_t d = 0; d < n; ++d) offset_ += static_cast<uint64_t>(block.start[d] * strides_[d]);
  }
  uint64_t operator()(int64_t i) const {
    if (shape_.empty()) return offset_ + static_cast<uint64_t>(i);
    int64_t logical = 0;
    for (size_t d = shape_.size(); d-- > 0;) {
      logical += (i % shape_[d]) * strides_[d];
      i /= shape_[d];
    }
    return offset_ + static_cast<uint64_t>(logical);
  }

 private:
  uint64_t offset_;
  Shape shape_;  // empty: the tensor is the whole logical tensor
  std::vector<int64_t> strides_;
};

void random_fill(const Tensor& out, int kind, double a, double b, uint64_t seed, uint64_t offset,
                 const RandomBlock& block) {
  OFL_CHECK(out.is_contiguous(), "random fill needs a contiguous tensor");
  const BlockCounters counter(out.shape(), block, offset);
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out.data<T>();
    parallel_for(out.numel(), 4096, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        uint64_t c = counter(i);
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

}  // namespace ofl::internal::cpu
