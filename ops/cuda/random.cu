// Philox fills on CUDA, drawing exactly the counters the CPU kernel draws (ops/cpu/random.cpp):
// element i of the logical tensor uses counter offset + i, also when the tensor is one block (a
// shard) of it, so a seed gives the same values on either device, laid out or split any way
// (normals through CUDA's log and cos, within an ulp of the host's in double).
#include "ops/cuda/common.cuh"
#include "ops/cuda/philox.cuh"
#include "ops/kernels.h"

namespace ofl::internal::cuda {
namespace {

// The logical counter of element i of a block (the CPU's BlockCounters).
struct Counters {
  int ndim = 0;  // 0: the tensor is the whole logical tensor
  int64_t shape[kMaxDims] = {}, strides[kMaxDims] = {};
  uint64_t offset = 0;

  __device__ uint64_t operator()(int64_t i) const {
    if (ndim == 0) return offset + uint64_t(i);
    int64_t logical = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      logical += (i % shape[d]) * strides[d];
      i /= shape[d];
    }
    return offset + uint64_t(logical);
  }
};

// Mantissa bits of T: a uniform draw is cut to this many, as on the CPU (and in PyTorch).
template <class T>
constexpr int kUniformBits = std::is_same_v<T, __half>          ? 11
                             : std::is_same_v<T, __nv_bfloat16> ? 8
                             : std::is_same_v<T, float>         ? 24
                                                                : 53;

template <class T>
__global__ void fill_random(T* out, int64_t n, int kind, double a, double b, uint64_t seed,
                            Counters counter) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const uint64_t c = counter(i);
  double v;
  if (kind == 0) {
    double u = uniform(c, seed);
    if constexpr (kUniformBits<T> < 53) {
      const double scale = double(1ull << kUniformBits<T>);
      u = ::floor(u * scale) / scale;
    }
    v = a + (b - a) * u;
  } else if (kind == 1) {
    v = a + b * normal(c, seed);
  } else {
    v = a + ::floor(uniform(c, seed) * (b - a));
    if (v >= b) v = b - 1;
  }
  out[i] = convert<T>(convert<device_math_t<T>>(v));
}

void random_fill(const Tensor& out, int kind, double a, double b, uint64_t seed, uint64_t offset,
                 const RandomBlock& block) {
  OFL_CHECK(out.is_contiguous(), "random fill needs a contiguous tensor");
  const int64_t n = out.numel();
  if (n == 0) return;
  Counters counter;
  counter.offset = offset;
  if (!block.logical.empty()) {
    const size_t nd = out.shape().size();
    OFL_CHECK(block.logical.size() == nd && block.start.size() == nd && int(nd) <= kMaxDims,
              "random block of ", shape_str(block.logical), " for ", shape_str(out.shape()));
    counter.ndim = int(nd);
    int64_t stride = 1;
    for (size_t d = nd; d-- > 0;) {
      counter.shape[d] = out.shape()[d];
      counter.strides[d] = stride;
      counter.offset += uint64_t(block.start[d] * stride);
      stride *= block.logical[d];
    }
  }
  const Launch launch(out.device(), "random");
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    fill_random<T><<<blocks_for(n, kThreads), kThreads, 0, stream_of(out.device())>>>(
        static_cast<T*>(out.raw_data()), n, kind, a, b, seed, counter);
  });
  launch.done();
}

OFL_REGISTER_KERNEL(random_kernel, DeviceType::kCUDA, random_fill);

}  // namespace
}  // namespace ofl::internal::cuda
