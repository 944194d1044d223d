// CPU multinomial sampling on Philox counters: draws depend only on (seed, offset, row, sample),
// so a row gives the same samples whichever rank holds it.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/parallel.h"
#include "core/random.h"
#include "ops/kernels.h"

namespace ofl::internal::cpu {
namespace {

template <class T>
double as_double(T v) {
  return static_cast<double>(static_cast<opmath_t<T>>(v));
}

void multinomial(const Tensor& probs, int64_t num_samples, bool replacement, uint64_t seed,
                 uint64_t offset, const Tensor& out) {
  const int64_t n = probs.shape().back(), rows = n ? probs.numel() / n : 0;
  dispatch_floating(probs.dtype(), "multinomial", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = probs.data<T>();
    int64_t* o = out.data<int64_t>();
    for (int64_t r = 0; r < rows; ++r) {  // check every row before drawing
      double total = 0;
      int64_t positive = 0;
      for (int64_t j = 0; j < n; ++j) {
        const double v = as_double(p[r * n + j]);
        if (!std::isfinite(v) || v < 0)
          fail("multinomial", "row ", r, " of the probability tensor of shape ",
               shape_str(probs.shape()), " contains inf, nan or an element < 0");
        total += v;
        positive += v > 0;
      }
      if (total <= 0)
        fail("multinomial", "row ", r, " of the probability tensor of shape ",
             shape_str(probs.shape()), " sums to ", total, ": no distribution to sample from");
      if (!replacement && positive < num_samples)
        fail("multinomial", "row ", r, " has ", positive, " categories of nonzero probability; ",
             num_samples, " samples without replacement need as many");
    }
    const uint64_t stride = static_cast<uint64_t>(replacement ? num_samples : n);
    parallel_for(rows, 1, [&](int64_t begin, int64_t end) {
      std::vector<double> key(n);
      std::vector<int64_t> order(n);
      for (int64_t r = begin; r < end; ++r) {
        const T* row = p + r * n;
        const uint64_t base = offset + static_cast<uint64_t>(r) * stride;
        if (replacement) {  // inverse CDF: the first category whose running sum passes u * total
          for (int64_t j = 0; j < n; ++j) key[j] = (j ? key[j - 1] : 0.0) + as_double(row[j]);
          for (int64_t s = 0; s < num_samples; ++s) {
            const double u = philox_uniform(base + s, seed) * key[n - 1];
            o[r * num_samples + s] = std::upper_bound(key.begin(), key.end(), u) - key.begin();
          }
          continue;
        }
        // Without replacement: the categories with the smallest Exp(1) / p, in order (the
        // exponential race, equivalent to drawing one at a time and renormalizing).
        for (int64_t j = 0; j < n; ++j) {
          const double pj = as_double(row[j]);
          const double e = -std::log1p(-philox_uniform(base + j, seed));
          key[j] = pj > 0 ? e / pj : INFINITY;
        }
        std::iota(order.begin(), order.end(), int64_t{0});
        std::partial_sort(
            order.begin(), order.begin() + num_samples, order.end(),
            [&](int64_t a, int64_t b) { return key[a] != key[b] ? key[a] < key[b] : a < b; });
        std::copy(order.begin(), order.begin() + num_samples, o + r * num_samples);
      }
    });
  });
}

}  // namespace

OFL_REGISTER_KERNEL(multinomial_kernel, DeviceType::kCPU, multinomial);

}  // namespace ofl::internal::cpu
