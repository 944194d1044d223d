// Device helpers for kernels that order lanes (contiguous segments of a tensor): keys that sort
// as unsigned integers in the CPU kernels' order of values (NaN greatest, -0 equal to +0), and
// each lane's stable order through CUB's segmented sort (compiled once, in sort.cu, for the four
// key widths). Included by sort.cu and multinomial.cu.
#pragma once
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

}  // namespace

// The stable order of each of `lanes` contiguous segments of n keys (ascending, or descending),
// as int64 positions within the segment. K: uint8_t, uint16_t, uint32_t or uint64_t.
template <class K>
Tensor lane_order(const K* keys, int64_t lanes, int64_t n, bool descending, Device device,
                  const char* op);

}  // namespace ofl::internal::cuda
