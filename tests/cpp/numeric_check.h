// Helpers for numeric tests: seeded tensors, float64 views, finite-difference gradients.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "ops/ops.h"

namespace ofl::internal::numeric_check {

inline Tensor random(const Shape& shape, DType dt, uint64_t seed, bool grad = false) {
  Generator gen(seed);
  Tensor t = randn(shape, dt, &gen);
  if (grad) t.set_requires_grad(true);
  return t;
}

inline std::vector<double> values(const Tensor& t) {
  autograd::NoGradGuard no_grad;
  Tensor c = contiguous(to_dtype(t, DType::kFloat64));
  return {c.data<double>(), c.data<double>() + c.numel()};
}

inline void expect_near(const std::vector<double>& got, const std::vector<double>& want,
                        double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "at element " << i;
}

// d loss / d t by central differences; t is a contiguous float64 leaf changed in place.
inline std::vector<double> numeric_grad(const Tensor& t, const std::function<double()>& loss,
                                        double h = 1e-6) {
  double* p = t.data<double>();
  std::vector<double> g(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = p[i];
    p[i] = v + h;
    const double up = loss();
    p[i] = v - h;
    const double down = loss();
    p[i] = v;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

inline double weighted_sum(const Tensor& y, const Tensor& r) {
  autograd::NoGradGuard no_grad;
  return sum(mul(y, r)).item<double>();
}

inline void run_backward(const Tensor& loss) {
  autograd::backward({loss}, {Tensor()}, false, false);
}

}  // namespace ofl::internal::numeric_check
