// CUDA kernel of multinomial: with replacement, each draw's inverse CDF in double; without, the
// exponential race (each lane's keys in stable order, lanes.cuh). Philox draws, so the same seed
// gives the CPU's values.
#include "ops/cuda/lanes.cuh"
#include "ops/cuda/philox.cuh"
#include "ops/kernels.h"

namespace ofl::internal::cuda {
namespace {

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
  const Launch launch(device, "multinomial");
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
  launch.done();
}

OFL_REGISTER_KERNEL(multinomial_kernel, DeviceType::kCUDA, multinomial);

}  // namespace
}  // namespace ofl::internal::cuda
