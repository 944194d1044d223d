// CUDA kernels of sort / argsort / topk: CUB's stable segmented sort of keys ordered as the CPU
// kernel orders values (lanes.cuh), so ties keep index order on both devices.
#include <cub/device/device_segmented_sort.cuh>

#include "ops/cuda/lanes.cuh"
#include "ops/kernels.h"

namespace ofl::internal::cuda {
namespace {

__global__ void lane_starts(int64_t* offsets, int64_t lanes, int64_t n) {
  const int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (t <= lanes) offsets[t] = t * n;
}

__global__ void lane_iota(int64_t* out, int64_t total, int64_t n) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e < total) out[e] = e % n;
}

}  // namespace

template <class K>
Tensor lane_order(const K* keys, int64_t lanes, int64_t n, bool descending, Device device,
                  const char* op) {
  const cudaStream_t stream = stream_of(device);
  const int64_t total = lanes * n;
  const Tensor starts = scratch(lanes + 1, DType::kInt64, device);
  const Tensor positions = scratch(total, DType::kInt64, device);
  const Tensor order = scratch(total, DType::kInt64, device);
  const Tensor sorted_keys = scratch(total * int64_t(sizeof(K)), DType::kUInt8, device);
  lane_starts<<<blocks_for(lanes + 1, kThreads), kThreads, 0, stream>>>(
      static_cast<int64_t*>(starts.raw_data()), lanes, n);
  lane_iota<<<blocks_for(total, kThreads), kThreads, 0, stream>>>(
      static_cast<int64_t*>(positions.raw_data()), total, n);
  const auto* begin = static_cast<const int64_t*>(starts.raw_data());
  auto sort = [&](void* temp, size_t& bytes) {
    auto* kout = static_cast<K*>(sorted_keys.raw_data());
    const auto* vin = static_cast<const int64_t*>(positions.raw_data());
    auto* vout = static_cast<int64_t*>(order.raw_data());
    check(descending
              ? cub::DeviceSegmentedSort::StableSortPairsDescending(
                    temp, bytes, keys, kout, vin, vout, total, lanes, begin, begin + 1, stream)
              : cub::DeviceSegmentedSort::StableSortPairs(temp, bytes, keys, kout, vin, vout, total,
                                                          lanes, begin, begin + 1, stream),
          op);
  };
  size_t bytes = 0;
  sort(nullptr, bytes);
  const Tensor temp = scratch(std::max<int64_t>(int64_t(bytes), 1), DType::kUInt8, device);
  sort(temp.raw_data(), bytes);
  launched(op);
  return order;
}

template Tensor lane_order(const uint8_t*, int64_t, int64_t, bool, Device, const char*);
template Tensor lane_order(const uint16_t*, int64_t, int64_t, bool, Device, const char*);
template Tensor lane_order(const uint32_t*, int64_t, int64_t, bool, Device, const char*);
template Tensor lane_order(const uint64_t*, int64_t, int64_t, bool, Device, const char*);

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
  const Launch launch(device, "sort");
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
  launch.done();
}

OFL_REGISTER_KERNEL(sort_kernel, DeviceType::kCUDA, sort_lanes);

}  // namespace
}  // namespace ofl::internal::cuda
