// CUDA kernels that order, scan or sample lanes: sort / argsort / topk through CUB's stable
// segmented sort, cumsum, and multinomial. Keys sort as unsigned integers ordered as the CPU
// kernel orders values (NaN greatest, -0 equal to +0), so ties keep index order on both devices.
#include <cub/device/device_segmented_sort.cuh>

#include "ops/cuda/common.cuh"
#include "ops/cuda/philox.cuh"
#include "ops/kernels.h"

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

// --- cumsum --------------------------------------------------------------------------------

// A thread per lane, accumulating as the CPU does (16-bit floats in float, bool in int64), so
// sums equal the CPU's; consecutive threads walk neighbouring lanes (coalesced when inner > 1).
template <class T, class M>
__global__ void scan_lanes(const T* x, T* out, int64_t n, int64_t inner, int64_t lanes,
                           bool reverse) {
  const int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (t >= lanes) return;
  const int64_t base = (t / inner) * n * inner + t % inner;
  M acc = M(0);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t at = base + (reverse ? n - 1 - j : j) * inner;
    acc = acc + convert<M>(x[at]);
    out[at] = convert<T>(acc);
  }
}

void cumsum(const Tensor& x, int64_t outer, int64_t n, int64_t inner, bool reverse,
            const Tensor& out) {
  const int64_t lanes = outer * inner;
  if (lanes * n == 0) return;
  check(cudaSetDevice(out.device().index), "cumsum");
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    using M = std::conditional_t<std::is_same_v<T, bool>, int64_t, device_math_t<T>>;
    scan_lanes<T, M><<<blocks_for(lanes, kThreads), kThreads, 0, stream_of(out.device())>>>(
        static_cast<const T*>(x.raw_data()), static_cast<T*>(out.raw_data()), n, inner, lanes,
        reverse);
  });
  check(cudaGetLastError(), "cumsum");
}

// --- multinomial ---------------------------------------------------------------------------

// Per row, as the CPU: the running sums in double (the inverse CDF), and [total, positive
// count, a bad element] for the host's checks.
template <class T>
__global__ void row_cdf(const T* p, double* cdf, double* stats, int64_t rows, int64_t n) {
  const int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (r >= rows) return;
  double total = 0, positive = 0, bad = 0;
  for (int64_t j = 0; j < n; ++j) {
    const double v = convert<double>(convert<device_math_t<T>>(p[r * n + j]));
    if (!isfinite(v) || v < 0) bad = 1;
    total += v;
    positive += v > 0;
    cdf[r * n + j] = total;
  }
  stats[3 * r] = total;
  stats[3 * r + 1] = positive;
  stats[3 * r + 2] = bad;
}

// With replacement: the first category whose running sum passes u * total.
__global__ void draw_replacing(const double* cdf, int64_t* out, int64_t rows, int64_t n,
                               int64_t samples, uint64_t seed, uint64_t offset) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= rows * samples) return;
  const int64_t r = e / samples, s = e % samples;
  const double* row = cdf + r * n;
  const double u =
      uniform(offset + uint64_t(r) * uint64_t(samples) + uint64_t(s), seed) * row[n - 1];
  int64_t lo = 0, hi = n;  // upper_bound
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (row[mid] <= u)
      lo = mid + 1;
    else
      hi = mid;
  }
  out[e] = lo;
}

// Without replacement, the exponential race: keys Exp(1) / p, smallest first. (CUDA's log1p may
// differ from glibc's in the last bit, so two keys within an ulp may order unlike the CPU's.)
template <class T>
__global__ void race_keys(const T* p, uint64_t* keys, int64_t rows, int64_t n, uint64_t seed,
                          uint64_t offset) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= rows * n) return;
  const double pj = convert<double>(convert<device_math_t<T>>(p[e]));
  const double race = -::log1p(-uniform(offset + uint64_t(e / n) * uint64_t(n) + e % n, seed));
  keys[e] = ordered_key(pj > 0 ? race / pj : double(INFINITY));
}

__global__ void first_of_rows(const int64_t* order, int64_t* out, int64_t rows, int64_t n,
                              int64_t samples) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e < rows * samples) out[e] = order[e / samples * n + e % samples];
}

void check_rows(const Tensor& probs, const Tensor& stats, int64_t num_samples, bool replacement) {
  const Tensor host = on_host(stats);
  const double* s = host.data<double>();
  for (int64_t r = 0; r < host.numel() / 3; ++r) {
    if (s[3 * r + 2] != 0)
      fail("multinomial", "row ", r, " of the probability tensor of shape ",
           shape_str(probs.shape()), " contains inf, nan or an element < 0");
    if (s[3 * r] <= 0)
      fail("multinomial", "row ", r, " of the probability tensor of shape ",
           shape_str(probs.shape()), " sums to ", s[3 * r], ": no distribution to sample from");
    if (!replacement && s[3 * r + 1] < double(num_samples))
      fail("multinomial", "row ", r, " has ", int64_t(s[3 * r + 1]),
           " categories of nonzero probability; ", num_samples,
           " samples without replacement need as many");
  }
}

void multinomial(const Tensor& probs, int64_t num_samples, bool replacement, uint64_t seed,
                 uint64_t offset, const Tensor& out) {
  const int64_t n = probs.shape().back(), rows = n ? probs.numel() / n : 0;
  if (rows == 0) return;
  const Device device = probs.device();
  check(cudaSetDevice(device.index), "multinomial");
  const cudaStream_t stream = stream_of(device);
  const Tensor cdf = scratch(rows * n, DType::kFloat64, device);
  const Tensor stats = scratch(rows * 3, DType::kFloat64, device);
  auto* o = static_cast<int64_t*>(out.raw_data());
  dispatch_floating(probs.dtype(), "multinomial", [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    const auto* p = static_cast<const T*>(probs.raw_data());
    row_cdf<T><<<blocks_for(rows, kThreads), kThreads, 0, stream>>>(
        p, static_cast<double*>(cdf.raw_data()), static_cast<double*>(stats.raw_data()), rows, n);
    check_rows(probs, stats, num_samples, replacement);
    if (replacement) {
      draw_replacing<<<blocks_for(rows * num_samples, kThreads), kThreads, 0, stream>>>(
          static_cast<const double*>(cdf.raw_data()), o, rows, n, num_samples, seed, offset);
      return;
    }
    auto* keys = static_cast<uint64_t*>(cdf.raw_data());  // the CDF is not needed: reuse it
    race_keys<T>
        <<<blocks_for(rows * n, kThreads), kThreads, 0, stream>>>(p, keys, rows, n, seed, offset);
    const Tensor order = lane_order<uint64_t>(keys, rows, n, false, device, "multinomial");
    first_of_rows<<<blocks_for(rows * num_samples, kThreads), kThreads, 0, stream>>>(
        static_cast<const int64_t*>(order.raw_data()), o, rows, n, num_samples);
  });
  check(cudaGetLastError(), "multinomial");
}

const bool registered = [] {
  sort_kernel().set(DeviceType::kCUDA, sort_lanes);
  cumsum_kernel().set(DeviceType::kCUDA, cumsum);
  multinomial_kernel().set(DeviceType::kCUDA, multinomial);
  return true;
}();

}  // namespace
}  // namespace ofl::internal::cuda
