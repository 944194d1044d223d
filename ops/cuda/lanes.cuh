// Device helpers for kernels that order lanes (contiguous segments of a tensor): keys that sort
// as unsigned integers in the CPU kernels' order of values (NaN greatest, -0 equal to +0), and
// each lane's stable order through CUB's segmented sort. Included by sort.cu and multinomial.cu.
#pragma once
#include <cub/device/device_segmented_sort.cuh>

#include "ops/cuda/common.cuh"

namespace ofl::internal::cuda {
namespace {

// The unsigned integer of T's size.
template <class T>
using key_t =
    std::conditional_t<sizeof(T) == 1, uint8_t,
                       std::conditional_t<sizeof(T) == 2, uint16_t,
                                          std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

// x as a key_t<T> whose order is x's: floats by sign and magnitude (every NaN the greatest, -0 as
// +0), signed integers with the sign bit flipped.
template <class T>
__device__ key_t<T> ordered_key(T x) {
  using K = key_t<T>;
  constexpr K kSign = K(K(1) << (8 * sizeof(T) - 1));
  if constexpr (is_half_v<T> || std::is_floating_point_v<T>) {
    const auto v = convert<device_math_t<T>>(x);
    if (v != v) return K(~K(0));
    if (v == 0) return kSign;
    K bits;
    memcpy(&bits, &x, sizeof(T));
    return (bits & kSign) ? K(~bits) : K(bits | kSign);
  } else if constexpr (std::is_signed_v<T>) {
    return K(K(x) ^ kSign);
  } else {
    return K(x);
  }
}

__global__ void lane_starts(int64_t* offsets, int64_t lanes, int64_t n) {
  const int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (t <= lanes) offsets[t] = t * n;
}

__global__ void lane_iota(int64_t* out, int64_t total, int64_t n) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e < total) out[e] = e % n;
}

// The stable order of each of `lanes` contiguous segments of n keys (ascending, or descending),
// as int64 positions within the segment.
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
  check(cudaGetLastError(), op);
  return order;
}

}  // namespace
}  // namespace ofl::internal::cuda
