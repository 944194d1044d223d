// CPU token sampling for generation: greedy, or temperature, top-k and top-p on one Philox draw
// per row, so a request's tokens depend only on its logits, seed and step.
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

// Row r's token from its logits x[0..n).
int64_t sample_row(const std::vector<double>& x, double temperature, int64_t top_k, double top_p,
                   uint64_t seed, uint64_t step, std::vector<int64_t>& order,
                   std::vector<double>& weight) {
  const int64_t n = int64_t(x.size());
  if (temperature <= 0) return std::max_element(x.begin(), x.end()) - x.begin();  // first max
  const int64_t k = top_k > 0 ? std::min(top_k, n) : n;
  std::iota(order.begin(), order.end(), int64_t{0});
  const auto larger = [&](int64_t a, int64_t b) { return x[a] != x[b] ? x[a] > x[b] : a < b; };
  std::partial_sort(order.begin(), order.begin() + k, order.end(), larger);
  // Softmax of the k largest at this temperature, then the fewest whose mass reaches top_p.
  double total = 0;
  for (int64_t j = 0; j < k; ++j)
    total += weight[j] = std::exp((x[order[j]] - x[order[0]]) / temperature);
  int64_t kept = k;
  if (top_p < 1) {
    double mass = 0;
    for (kept = 0; kept < k;) {
      mass += weight[kept++];
      if (mass >= top_p * total) break;
    }
    total = mass;
  }
  const double u = philox_uniform(step, seed) * total;
  double run = 0;
  for (int64_t j = 0; j < kept; ++j) {
    run += weight[j];
    if (u < run) return order[j];
  }
  return order[kept - 1];  // u rounded up to the total
}

void sample_tokens(const Tensor& logits, const Tensor& seeds, const Tensor& steps,
                   const Tensor& temperature, const Tensor& top_k, const Tensor& top_p,
                   const Tensor& out) {
  const int64_t rows = logits.shape()[0], n = logits.shape()[1];
  const int64_t *seed = seeds.data<int64_t>(), *step = steps.data<int64_t>(),
                *k = top_k.data<int64_t>();
  const double *t = temperature.data<double>(), *p = top_p.data<double>();
  for (int64_t r = 0; r < rows; ++r) {  // check every row before drawing
    if (!(t[r] >= 0) || !std::isfinite(t[r]))
      fail("sample_tokens", "row ", r, ": temperature must be finite and >= 0, got ", t[r]);
    if (!(p[r] > 0 && p[r] <= 1))
      fail("sample_tokens", "row ", r, ": top_p must be in (0, 1], got ", p[r]);
    if (k[r] < 0) fail("sample_tokens", "row ", r, ": top_k must be >= 0 (0: all), got ", k[r]);
  }
  int64_t* o = out.data<int64_t>();
  dispatch_floating(logits.dtype(), "sample_tokens", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* l = logits.data<T>();
    for (int64_t r = 0; r < rows; ++r) {  // -inf masks a token; nan, +inf or all masked: no
      double top = -INFINITY;
      for (int64_t j = 0; j < n; ++j) {
        const double v = as_double(l[r * n + j]);
        if (std::isnan(v) || v == INFINITY)
          fail("sample_tokens", "row ", r, " of the logits of shape ", shape_str(logits.shape()),
               " holds ", v);
        top = std::max(top, v);
      }
      if (top == -INFINITY)
        fail("sample_tokens", "row ", r, " of the logits of shape ", shape_str(logits.shape()),
             " masks every token (all -inf)");
    }
    parallel_for(rows, 1, [&](int64_t begin, int64_t end) {
      std::vector<double> x(n), weight(n);
      std::vector<int64_t> order(n);
      for (int64_t r = begin; r < end; ++r) {
        for (int64_t j = 0; j < n; ++j) x[j] = as_double(l[r * n + j]);
        o[r] = sample_row(x, t[r], k[r], p[r], uint64_t(seed[r]), uint64_t(step[r]), order, weight);
      }
    });
  });
}

}  // namespace

OFL_REGISTER_KERNEL(sample_tokens_kernel, DeviceType::kCPU, sample_tokens);

}  // namespace ofl::internal::cpu
