// In-place elementwise ops. add_, sub_, mul_, div_ and clamp_ are the in-place forms of their
// out-of-place definitions (inplace_variant, registered next to them); copy_, fill_ and zero_
// are defined here. The dispatcher checks writes through leaves, views and expanded tensors,
// bumps the version and records the history (DESIGN.md, "One op, one definition").
#include <cmath>

#include "core/dispatcher.h"
#include "ops/elementwise.h"
#include "ops/elementwise_grad.h"
#include "ops/elementwise_sbp.h"
#include "ops/kernels.h"
#include "ops/op_helpers.h"

namespace ofl::internal {

using namespace elementwise_sbp;

using elementwise_grad::grad_for;
using elementwise_grad::scaled;

namespace {

std::vector<TensorMeta> self_meta(const TensorMeta& self) {
  return single_output(self.shape, self.dtype, self.device);
}

std::vector<TensorMeta> infer_copy(const InferArgs& a) {
  const TensorMeta &self = a.in[0], &src = a.in[1];
  if (src.device.is_meta() && !self.device.is_meta())
    fail(a.op, "cannot copy out of a meta tensor ", src.str(), ": it has no data");
  if (broadcast_shapes(self.shape, src.shape, a.op) != self.shape)
    fail(a.op, "source of shape ", shape_str(src.shape),
         " cannot be broadcast to the destination's shape ", shape_str(self.shape));
  return self_meta(self);
}

void compute_copy(const ComputeArgs& c) {
  // A src sharing self's memory arrives as a copy (the dispatcher's rule for in-place ops).
  copy_into(c.out[0], c.in[1]);
}

void compute_fill(const ComputeArgs& c) {
  const double value = c.attrs.has("value") ? c.attrs.get<double>("value") : 0.0;
  fill_into(c.out[0], value);
}

Tensor& run_inplace(const char* name, Tensor& self, const std::vector<Tensor>& others,
                    const Attrs& attrs = {}) {
  std::vector<Tensor> inputs{self};
  inputs.insert(inputs.end(), others.begin(), others.end());
  dispatch(op_def(name), inputs, attrs);
  return self;
}

}  // namespace

Tensor& add_(Tensor& self, const Tensor& other, double alpha) {
  return run_inplace("add_", self, {scaled(other, alpha)});
}

Tensor& sub_(Tensor& self, const Tensor& other, double alpha) {
  return run_inplace("sub_", self, {scaled(other, alpha)});
}

Tensor& mul_(Tensor& self, const Tensor& other) {
  return run_inplace("mul_", self, {other});
}

Tensor& div_(Tensor& self, const Tensor& other) {
  return run_inplace("div_", self, {other});
}

Tensor& copy_(Tensor& self, const Tensor& src) {
  return run_inplace("copy_", self, {src});
}

Tensor& fill_(Tensor& self, double value) {
  return run_inplace("fill_", self, {}, {{"value", value}});
}

Tensor& zero_(Tensor& self) {
  return run_inplace("zero_", self, {});
}

Tensor& clamp_(Tensor& self, std::optional<double> lo, std::optional<double> hi) {
  if (!lo && !hi) fail("clamp_", "at least one of min and max must be given");
  return run_inplace("clamp_", self, {},
                     {{"min", lo.value_or(-INFINITY)}, {"max", hi.value_or(INFINITY)}});
}

namespace {

// copy_(self, src): every layout, self and src alike.
const SbpRule kCopy{"copy", identity};

// fill_ / zero_ (typed attr value; zero_ has none): partials pass only when filling zeros.
Sigs fill_sbp(const SbpQuery& q) {
  Sigs sigs = broadcast_splits(q);
  if (!q.typed->has("value") || q.typed->get<double>("value") == 0.0)
    for (const Sbp& p : {kPSum, kPMax, kPMin}) sigs.push_back(uniform(q, p));
  return sigs;
}
const SbpRule kFill{"fill", fill_sbp};

}  // namespace

OFL_REGISTER_OPS({
    {.name = "copy_",
     .num_inputs = 2,
     .cost = elementwise_cost,
     .sbp = &kCopy,
     .infer = infer_copy,
     .compute = compute_copy,
     .backward =
         [](const BackwardArgs& b) {
           return std::vector<Tensor>{Tensor(),
                                      b.needs[1] ? grad_for(b.grads[0], b.in_meta[1]) : Tensor()};
         },
     .inplace = true,
     .complex = true,
     .api = {{"copy_(Tensor input, Tensor|Number src) -> Tensor",
              [](const CallArgs& a) {
                Tensor self = a.tensor(0);
                return copy_(self, a.tensor(1));
              },
              kMethod}}},
    {.name = "fill_",
     .num_inputs = 1,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &kFill,
     .attrs = {{"value", AttrType::kFloat}},
     .infer = [](const InferArgs& a) { return self_meta(a.in[0]); },
     .compute = compute_fill,
     .inplace = true,
     .api = {{"fill_(Tensor input, float value) -> Tensor",
              [](const CallArgs& a) {
                Tensor self = a.tensor(0);
                return fill_(self, a.number(1));
              },
              kMethod}}},
    {.name = "zero_",
     .num_inputs = 1,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &kFill,
     .infer = [](const InferArgs& a) { return self_meta(a.in[0]); },
     .compute = compute_fill,
     .inplace = true,
     .api = {{"zero_(Tensor input) -> Tensor",
              [](const CallArgs& a) {
                Tensor self = a.tensor(0);
                return zero_(self);
              },
              kMethod}}},
});

}  // namespace ofl::internal
