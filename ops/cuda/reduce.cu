// CUDA reductions over the middle axis of a contiguous [outer, reduce, inner] view: a block per
// row when the reduced axis is the last (a shared-memory tree), else a thread per output walking
// the axis (neighbouring threads read neighbouring elements); with too few outputs to fill the
// GPU, the axis is cut into pieces reduced in two passes. Floats accumulate in float (double
// for float64), integers and bools in int64, as PyTorch's CUDA kernels do.
#include <algorithm>
#include <limits>

#include "ops/cuda/common.cuh"
#include "ops/kernels.h"

namespace ofl::internal::cuda {
namespace {

template <class T>
using acc_t =
    std::conditional_t<std::is_floating_point_v<device_math_t<T>>, device_math_t<T>, int64_t>;

struct Sum {
  template <class A>
  __device__ A operator()(A a, A b) const {
    return a + b;
  }
};
struct Prod {
  template <class A>
  __device__ A operator()(A a, A b) const {
    return a * b;
  }
};
struct Max {  // NaN propagates
  template <class A>
  __device__ A operator()(A a, A b) const {
    return (a != a || a > b) ? a : b;
  }
};
struct Min {
  template <class A>
  __device__ A operator()(A a, A b) const {
    return (a != a || a < b) ? a : b;
  }
};

// Rows of `red` elements, each in `chunks` pieces of `len`: block b reduces piece b % chunks of
// row b / chunks into out[b] (one piece: the whole row).
template <class T, class U, class A, class R>
__global__ void reduce_rows(const T* x, U* out, int64_t pieces, int64_t red, int64_t chunks,
                            int64_t len, A init, R combine) {
  __shared__ A partial[kThreads];
  for (int64_t b = blockIdx.x; b < pieces; b += gridDim.x) {
    const int64_t row = b / chunks, begin = (b % chunks) * len;
    const int64_t end = begin + len < red ? begin + len : red;
    A acc = init;
    for (int64_t r = begin + threadIdx.x; r < end; r += blockDim.x)
      acc = combine(acc, convert<A>(x[row * red + r]));
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half)
        partial[threadIdx.x] = combine(partial[threadIdx.x], partial[threadIdx.x + half]);
      __syncthreads();
    }
    if (threadIdx.x == 0) out[b] = convert<U>(partial[0]);
    __syncthreads();
  }
}

// [outer, red, inner] with the reduced axis in blockIdx.y's `gridDim.y` pieces of `len`: thread
// (i, c) reduces piece c of output i's column into out[(o * gridDim.y + c) * inner + in].
template <class T, class U, class A, class R>
__global__ void reduce_columns(const T* x, U* out, int64_t outer, int64_t red, int64_t inner,
                               int64_t len, A init, R combine) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= outer * inner) return;
  const int64_t o = i / inner, in = i % inner, c = blockIdx.y;
  const int64_t begin = c * len, end = begin + len < red ? begin + len : red;
  A acc = init;
  for (int64_t r = begin; r < end; ++r)
    acc = combine(acc, convert<A>(x[(o * red + r) * inner + in]));
  out[(o * gridDim.y + c) * inner + in] = convert<U>(acc);
}

template <class A>
constexpr DType acc_dtype() {
  if constexpr (std::is_same_v<A, float>) return DType::kFloat32;
  if constexpr (std::is_same_v<A, double>) return DType::kFloat64;
  return DType::kInt64;
}

// Enough blocks to fill the GPU: a reduction with few outputs splits its axis into pieces,
// reduced in a first pass into partial results (in A, in a fixed order: deterministic).
constexpr int64_t kBusyBlocks = 512;

template <class T, class A, class R>
void launch(const Tensor& in, const Tensor& out, int64_t outer, int64_t red, int64_t inner, A init,
            R combine) {
  if (outer * inner == 0) return;
  const Launch launch(out.device(), "reduce");
  cudaStream_t stream = stream_of(out.device());
  const T* x = static_cast<const T*>(in.raw_data());
  T* o = static_cast<T*>(out.raw_data());
  if (inner == 1) {
    // Pieces of at least 16 elements a thread; rows already enough blocks stay whole.
    const int64_t chunks =
        std::min((kBusyBlocks + outer - 1) / outer, (red + 16 * kThreads - 1) / (16 * kThreads));
    if (chunks <= 1) {
      const int64_t blocks = std::min<int64_t>(outer, 65535);
      reduce_rows<<<blocks, kThreads, 0, stream>>>(x, o, outer, red, 1, red, init, combine);
    } else {
      const int64_t len = (red + chunks - 1) / chunks, pieces = outer * chunks;
      Tensor part = scratch(pieces, acc_dtype<A>(), out.device());
      A* p = static_cast<A*>(part.raw_data());
      reduce_rows<<<std::min<int64_t>(pieces, 65535), kThreads, 0, stream>>>(
          x, p, pieces, red, chunks, len, init, combine);
      reduce_rows<<<std::min<int64_t>(outer, 65535), kThreads, 0, stream>>>(p, o, outer, chunks, 1,
                                                                            chunks, init, combine);
    }
  } else {
    const int64_t blocks = blocks_for(outer * inner, kThreads);
    // Pieces of at least 64 rows a thread, at most 65535 (gridDim.y's limit).
    const int64_t chunks =
        std::min<int64_t>({(kBusyBlocks + blocks - 1) / blocks, (red + 63) / 64, int64_t(65535)});
    if (chunks <= 1) {
      reduce_columns<<<blocks, kThreads, 0, stream>>>(x, o, outer, red, inner, red, init, combine);
    } else {
      const int64_t len = (red + chunks - 1) / chunks;
      Tensor part = scratch(outer * chunks * inner, acc_dtype<A>(), out.device());
      A* p = static_cast<A*>(part.raw_data());
      reduce_columns<<<dim3(unsigned(blocks), unsigned(chunks)), kThreads, 0, stream>>>(
          x, p, outer, red, inner, len, init, combine);
      reduce_columns<<<blocks, kThreads, 0, stream>>>(p, o, outer, chunks, inner, chunks, init,
                                                      combine);
    }
  }
  launch.done();
}

template <class A>
A lowest() {
  return std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity()
                                              : std::numeric_limits<A>::lowest();
}
template <class A>
A highest() {
  return std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity()
                                              : std::numeric_limits<A>::max();
}

void reduce(ReduceOp op, const Tensor& in, int64_t outer, int64_t red, int64_t inner,
            const Tensor& out) {
  OFL_CHECK(in.is_contiguous() && out.is_contiguous());
  if (op == ReduceOp::kAll)  // the product of 0/1 values; any: their sum (both right when empty)
    return launch<bool, int64_t>(in, out, outer, red, inner, int64_t(1), Prod{});
  if (op == ReduceOp::kAny)
    return launch<bool, int64_t>(in, out, outer, red, inner, int64_t(0), Sum{});
  dispatch_all(in.dtype(), [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    using A = acc_t<T>;
    switch (op) {
      case ReduceOp::kSum:
        return launch<T, A>(in, out, outer, red, inner, A(0), Sum{});
      case ReduceOp::kProd:
        return launch<T, A>(in, out, outer, red, inner, A(1), Prod{});
      case ReduceOp::kMax:
        return launch<T, A>(in, out, outer, red, inner, lowest<A>(), Max{});
      case ReduceOp::kMin:
        return launch<T, A>(in, out, outer, red, inner, highest<A>(), Min{});
      default:
        OFL_CHECK(false, "bad reduce op");
    }
  });
}

// The first index of the max (or min) along the axis, a thread per output; a NaN wins.
template <class T>
__global__ void arg_columns(const T* x, T* values, int64_t* indices, int64_t outer, int64_t red,
                            int64_t inner, bool is_max) {
  using M = device_math_t<T>;
  const int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (k >= outer * inner) return;
  const T* p = x + (k / inner) * red * inner + k % inner;
  M best = convert<M>(p[0]);
  int64_t bi = 0;
  for (int64_t r = 1; r < red; ++r) {
    const M cur = convert<M>(p[r * inner]);
    if (best != best) break;
    if (cur != cur || (is_max ? cur > best : cur < best)) {
      best = cur;
      bi = r;
    }
  }
  values[k] = convert<T>(best);
  indices[k] = bi;
}

void arg_reduce(bool is_max, const Tensor& in, int64_t outer, int64_t red, int64_t inner,
                const Tensor& values, const Tensor& indices) {
  OFL_CHECK(in.is_contiguous());
  if (outer * inner == 0) return;
  const Launch launch(values.device(), "argmax");
  dispatch_all(in.dtype(), [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    arg_columns<T>
        <<<blocks_for(outer * inner, kThreads), kThreads, 0, stream_of(values.device())>>>(
            static_cast<const T*>(in.raw_data()), static_cast<T*>(values.raw_data()),
            static_cast<int64_t*>(indices.raw_data()), outer, red, inner, is_max);
  });
  launch.done();
}

OFL_REGISTER_KERNEL(reduce_kernel, DeviceType::kCUDA, reduce);
OFL_REGISTER_KERNEL(arg_reduce_kernel, DeviceType::kCUDA, arg_reduce);

}  // namespace
}  // namespace ofl::internal::cuda
