// CUDA kernels of sort / argsort / topk: CUB's stable segmented sort of keys ordered as the CPU
// kernel orders values (lanes.cuh), so ties keep index order on both devices.
#include "ops/cuda/lanes.cuh"
#include "ops/kernels.h"

namespace ofl::internal::cuda {
namespace {

// --- sort, argsort, topk -------------------------------------------------------------------

// Lane-major keys: lane (o, i) of x viewed as [outer, n, inner] is keys[(o * inner + i) * n ...].
template <class T>
__global__ void lane_keys(const T* x, key_t<T>* keys, int64_t n, int64_t inner, int64_t total) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= total) return;
  const int64_t lane = e / n, j = e % n;
  keys[e] = ordered_key(x[(lane / inner * n + j) * inner + lane % inner]);
}

template <class T>
__global__ void take_first(const T* x, const int64_t* order, T* values, int64_t* indices, int64_t n,
                           int64_t inner, int64_t k, int64_t total) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= total) return;
  const int64_t i = e % inner, j = e / inner % k, o = e / inner / k;
  const int64_t picked = order[(o * inner + i) * n + j];
  indices[e] = picked;
  if (values) values[e] = x[(o * n + picked) * inner + i];
}

void sort_lanes(const Tensor& x, int64_t outer, int64_t n, int64_t inner, int64_t k,
                bool descending, const Tensor& values, const Tensor& indices) {
  const int64_t lanes = outer * inner, total = lanes * n;
  if (lanes * k == 0) return;
  const Device device = x.device();
  check(cudaSetDevice(device.index), "sort");
  const cudaStream_t stream = stream_of(device);
  dispatch_all(x.dtype(), [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    using K = key_t<T>;
    const Tensor keys = scratch(total * int64_t(sizeof(K)), DType::kUInt8, device);
    const auto* in = static_cast<const T*>(x.raw_data());
    lane_keys<T><<<blocks_for(total, kThreads), kThreads, 0, stream>>>(
        in, static_cast<K*>(keys.raw_data()), n, inner, total);
    const Tensor order =
        lane_order(static_cast<const K*>(keys.raw_data()), lanes, n, descending, device, "sort");
    take_first<T><<<blocks_for(lanes * k, kThreads), kThreads, 0, stream>>>(
        in, static_cast<const int64_t*>(order.raw_data()),
        values.defined() ? static_cast<T*>(values.raw_data()) : nullptr,
        static_cast<int64_t*>(indices.raw_data()), n, inner, k, lanes * k);
  });
  check(cudaGetLastError(), "sort");
}

OFL_REGISTER_KERNEL(sort_kernel, DeviceType::kCUDA, sort_lanes);

}  // namespace
}  // namespace ofl::internal::cuda
