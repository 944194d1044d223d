// Creation ops and random fills.
#include "ops/creation.h"

#include <cmath>

#include "core/dispatcher.h"
#include "ops/global_op.h"
#include "ops/kernels.h"
#include "ops/op_def.h"
#include "ops/sbp_rules.h"

namespace ofl {

namespace {
void check_float(const char* op, DType dtype) {
  if (!is_floating(dtype))
    fail<TypeError>(op, "expects a floating-point dtype, got ", dtype_name(dtype));
}
void random_fill(const Tensor& t, int kind, double a, double b, Generator* gen) {
  Generator& g = gen ? *gen : default_generator();
  uint64_t offset = g.advance(static_cast<uint64_t>(t.numel()));
  if (t.is_contiguous()) {
    random_kernel().get(t.device().type)(t, kind, a, b, g.seed(), offset, {});
    return;
  }
  Tensor tmp = Tensor::empty(t.shape(), t.dtype(), t.device());
  random_kernel().get(t.device().type)(tmp, kind, a, b, g.seed(), offset, {});
  copy_kernel().get(t.device().type)(tmp, t);
}
}  // namespace

Tensor full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = Tensor::empty(shape, dtype, device);
  fill_kernel().get(device.type)(t, value);
  return t;
}
Tensor zeros(const Shape& shape, DType dtype, Device device) {
  return full(shape, 0.0, dtype, device);
}
Tensor ones(const Shape& shape, DType dtype, Device device) {
  return full(shape, 1.0, dtype, device);
}
// Of a global tensor: the same placement and layout, each rank filling only its shard.
Tensor full_like(const Tensor& t, double value, std::optional<DType> dtype) {
  static const OpDef& def = op_def("full_like");
  return dispatch1(def, {t}, {{"value", value}, {"dtype", dtype.value_or(t.dtype())}});
}
Tensor to_device(const Tensor& t, Device device) {
  if (t.device() == device) return t;
  if (device.is_meta()) {
    Tensor out = Tensor::empty(t.shape(), t.dtype(), device);
    out.impl()->global = t.impl()->global;
    return out;
  }
  if (t.device().is_meta())
    fail("to", "cannot copy out of a meta tensor of shape ", shape_str(t.shape()),
         ": it has no data (create the tensor on ", device.str(),
         ", or use Module.to_empty(device=...) for modules)");
  fail("to", "moving a tensor to ", device.str(),
       " is not supported yet: ops run on the cpu (and shapes on the meta device) in this version");
}

Tensor zeros_like(const Tensor& t) {
  return full_like(t, 0.0);
}
Tensor ones_like(const Tensor& t) {
  return full_like(t, 1.0);
}
Tensor scalar_tensor(double value, DType dtype, Device device) {
  return full({}, value, dtype, device);
}

Tensor arange(double start, double end, double step, DType dtype, Device device) {
  if (step == 0) fail("arange", "step must be nonzero");
  if ((end - start) / step < 0)
    fail("arange", "upper bound ", end, " and lower bound ", start,
         " are inconsistent with the step sign ", step);
  int64_t n = static_cast<int64_t>(std::ceil((end - start) / step));
  Tensor out = Tensor::empty({n}, DType::kFloat64, device);
  double* p = out.data<double>();
  for (int64_t i = 0; i < n; ++i) p[i] = start + static_cast<double>(i) * step;
  return to_dtype(out, dtype);
}

Tensor linspace(double start, double end, int64_t steps, DType dtype, Device device) {
  if (steps < 0) fail("linspace", "number of steps must be non-negative, got ", steps);
  Tensor out = Tensor::empty({steps}, DType::kFloat64, device);
  double* p = out.data<double>();
  double delta = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
  for (int64_t i = 0; i < steps; ++i)  // symmetric from both ends, like PyTorch
    p[i] = i < steps / 2 ? start + delta * i : end - delta * (steps - 1 - i);
  if (steps == 1) p[0] = start;
  return to_dtype(out, dtype);
}

Tensor eye(int64_t n, int64_t m, DType dtype, Device device) {
  if (n < 0 || m < 0) fail("eye", "sizes must be non-negative, got ", n, " and ", m);
  Tensor out = zeros({n, m}, DType::kFloat64, device);
  double* p = out.data<double>();
  for (int64_t i = 0; i < std::min(n, m); ++i) p[i * m + i] = 1.0;
  return to_dtype(out, dtype);
}

Tensor rand(const Shape& shape, DType dtype, Generator* gen, Device device) {
  check_float("rand", dtype);
  Tensor t = Tensor::empty(shape, dtype, device);
  random_fill(t, 0, 0.0, 1.0, gen);
  return t;
}

Tensor randn(const Shape& shape, DType dtype, Generator* gen, Device device) {
  check_float("randn", dtype);
  Tensor t = Tensor::empty(shape, dtype, device);
  random_fill(t, 1, 0.0, 1.0, gen);
  return t;
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype, Generator* gen,
               Device device) {
  if (high <= low) fail("randint", "high (", high, ") must be greater than low (", low, ")");
  Tensor t = Tensor::empty(shape, dtype, device);
  random_fill(t, 2, static_cast<double>(low), static_cast<double>(high), gen);
  return t;
}

void uniform_(const Tensor& t, double low, double high, Generator* gen) {
  check_float("uniform_", t.dtype());
  random_fill(t, 0, low, high, gen);
  t.bump_version();
}

void normal_(const Tensor& t, double mean, double std, Generator* gen) {
  check_float("normal_", t.dtype());
  if (std < 0) fail("normal_", "std must be non-negative, got ", std);
  random_fill(t, 1, mean, std, gen);
  t.bump_version();
}

OFL_REGISTER_OPS({
    {.name = "zeros", .num_inputs = 0, .differentiable = false, .cost = elementwise_cost},
    {.name = "ones", .num_inputs = 0, .differentiable = false, .cost = elementwise_cost},
    {.name = "full", .num_inputs = 0, .differentiable = false, .cost = elementwise_cost},
    {.name = "arange", .num_inputs = 0, .differentiable = false, .cost = elementwise_cost},
    {.name = "linspace", .num_inputs = 0, .differentiable = false, .cost = elementwise_cost},
    {.name = "eye", .num_inputs = 0, .differentiable = false, .cost = elementwise_cost},
    {.name = "rand", .num_inputs = 0, .differentiable = false, .cost = elementwise_cost},
    {.name = "randn", .num_inputs = 0, .differentiable = false, .cost = elementwise_cost},
    {.name = "randint", .num_inputs = 0, .differentiable = false, .cost = elementwise_cost},
    {.name = "full_like",
     .num_inputs = 1,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kFillLike,
     .attrs = {{"value", AttrType::kFloat}, {"dtype", AttrType::kDType}},
     .infer = [](const InferArgs& a) -> std::vector<TensorMeta> {
       return {{a.in[0].shape, a.attrs.get<DType>("dtype"), a.in[0].device}};
     },
     .compute =
         [](const ComputeArgs& c) {
           fill_kernel().get(c.out[0].device().type)(c.out[0], c.attrs.get<double>("value"));
         }},
});

}  // namespace ofl
