// The optimizers' fused updates: Adam's moments and step as one in-place op each, where the
// Python optimizer would dispatch a dozen elementwise ops per parameter (and the GPU run as many
// kernels, each reading and writing the whole tensor).
#include "ops/optim.h"
#include "core/dispatcher.h"
#include "ops/elementwise_sbp.h"
#include "ops/kernels.h"
#include "ops/op_helpers.h"

namespace ofl::internal {
namespace {

// Inputs 1 to `tensors` - 1 of the shape and floating dtype of input 0 (written in place); the
// rest 0-d floating scalars (per-step values: graph inputs under nn.Graph, so not attributes).
std::vector<TensorMeta> infer_update(const InferArgs& a, size_t tensors) {
  const TensorMeta& x = a.in[0];
  if (!is_floating(x.dtype)) fail<TypeError>(a.op, "updates floating tensors, got ", x.str());
  for (size_t i = 1; i < a.in.size(); ++i) {
    const TensorMeta& t = a.in[i];
    if (i < tensors && t.device != x.device)  // (0-d tensors would pass common_device)
      fail(a.op, "operand ", i, " ", t.str(), " is on ", t.device.str(),
           " but the updated tensor on ", x.device.str());
    if (i < tensors ? (t.shape != x.shape || t.dtype != x.dtype)
                    : (!t.shape.empty() || !is_floating(t.dtype)))
      fail(a.op, "operand ", i, " ", t.str(), " does not match the updated tensor ", x.str(),
           i < tensors ? "" : " (a 0-d floating scalar is expected)");
  }
  return single_output(x.shape, x.dtype, common_device(a));
}

// Runs `kernel` on contiguous operands: the updated tensor itself when it is contiguous, else a
// contiguous copy written back.
template <class Kernel>
void update(const ComputeArgs& c, Kernel kernel) {
  const Tensor& x = c.out[0];
  std::vector<Tensor> in{x.is_contiguous() ? x : contiguous_copy(x)};
  for (size_t i = 1; i < c.in.size(); ++i) in.push_back(contiguous_local(c.in[i]));
  kernel(in);
  if (in[0].storage() != x.storage()) copy_into(x, in[0]);
}

void compute_moment(const ComputeArgs& c) {
  update(c, [&](const std::vector<Tensor>& t) {
    adam_moment_kernel().get(t[0].device().type)(t[0], t[1], c.attrs.get<double>("decay"),
                                                 c.attrs.get<bool>("square"));
  });
}

void compute_step(const ComputeArgs& c) {
  update(c, [&](const std::vector<Tensor>& t) {
    adam_step_kernel().get(t[0].device().type)(t[0], t[1], t[2], t[3].item<double>(),
                                               t[4].item<double>(), t[5].item<double>(),
                                               c.attrs.get<double>("eps"));
  });
}

OFL_REGISTER_OPS({
    {.name = "adam_moment_",
     .num_inputs = 2,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &elementwise_sbp::kElementwise,
     .attrs = {{"decay", AttrType::kFloat}, {"square", AttrType::kBool}},
     .infer = [](const InferArgs& a) { return infer_update(a, 2); },
     .compute = compute_moment,
     .inplace = true,
     .api = {{"adam_moment_(Tensor x, Tensor grad, float decay, bool square=False) -> Tensor",
              nullptr, kInternal}},
     .doc = "x = decay * x + (1 - decay) * grad (grad squared with square), in place"},
    {.name = "adam_step_",
     .num_inputs = 6,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &elementwise_sbp::kElementwise,
     .attrs = {{"eps", AttrType::kFloat}},
     .infer = [](const InferArgs& a) { return infer_update(a, 3); },
     .compute = compute_step,
     .inplace = true,
     .api = {{"adam_step_(Tensor param, Tensor exp_avg, Tensor exp_avg_sq, Tensor|Number decay, "
              "Tensor|Number step_size, Tensor|Number bias2_sqrt, float eps) -> Tensor",
              nullptr, kInternal}},
     .doc = "Adam's parameter update from its moments, in place"},
});

}  // namespace

Tensor& adam_moment_(Tensor& x, const Tensor& g, double decay, bool square) {
  static const OpDef& def = op_def("adam_moment_");
  dispatch(def, {x, g}, {{"decay", decay}, {"square", square}});
  return x;
}

Tensor& adam_step_(Tensor& param, const Tensor& m, const Tensor& v, const Tensor& decay,
                   const Tensor& step_size, const Tensor& bias2_sqrt, double eps) {
  static const OpDef& def = op_def("adam_step_");
  dispatch(def, {param, m, v, decay, step_size, bias2_sqrt}, {{"eps", eps}});
  return param;
}

}  // namespace ofl::internal
