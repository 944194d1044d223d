#include "ops/op_def.h"

#include "core/dispatcher.h"
#include "core/error.h"

namespace ofl {

void require_local(const char* op, const Tensor& t) {
  if (t.defined() && t.is_global())
    fail(op,
         "does not take global tensors yet (it has no SBP rule); got a global tensor whose local "
         "shard is ",
         t.str(), "; call to_local() or numpy() first");
}

void require_output_shapes(const OpDef& def, const ComputeArgs& c) {
  std::vector<TensorMeta> in;
  for (const Tensor& t : c.in) in.push_back(meta_of(t));
  const std::vector<TensorMeta> want = def.infer({def.name.c_str(), in, c.attrs});
  for (size_t j = 0; j < want.size() && j < c.out.size(); ++j)
    if (want[j].shape != c.out[j].shape())
      fail(def.name.c_str(), "output ", j, " has shape ", shape_str(c.out[j].shape()),
           " but its inputs give ", shape_str(want[j].shape));
}

Device common_device(const InferArgs& a) {
  const TensorMeta* first = nullptr;
  for (const TensorMeta& m : a.in) {
    if (!m.defined) continue;
    const bool follower = m.wrapped || (m.shape.empty() && m.device.type == DeviceType::kCPU);
    if (follower) continue;
    if (!first)
      first = &m;
    else if (m.device != first->device)
      fail(a.op, "tensors are on different devices: ", first->device.str(), " and ",
           m.device.str());
  }
  if (first) return first->device;
  for (const TensorMeta& m : a.in)
    if (m.defined) return m.device;
  return Device{};
}

OpCost elementwise_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype) {
  double elems = static_cast<double>(numel_of(output));
  for (const auto& s : inputs) elems += static_cast<double>(numel_of(s));
  return {static_cast<double>(numel_of(output)), elems * itemsize(dtype)};
}

OpCost view_cost(const std::vector<Shape>&, const Shape&, DType) {
  return {};
}

OpCost matmul_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype) {
  const Shape& a = inputs.at(0);
  double k = a.empty() ? 1 : static_cast<double>(a.back());
  auto cost = elementwise_cost(inputs, output, dtype);
  cost.flops = 2.0 * static_cast<double>(numel_of(output)) * k;
  return cost;
}

OpCost conv2d_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype) {
  const Shape& w = inputs.at(1);
  double macs_per_output = w.size() == 4 ? static_cast<double>(w[1] * w[2] * w[3]) : 1.0;
  auto cost = elementwise_cost(inputs, output, dtype);
  cost.flops = 2.0 * static_cast<double>(numel_of(output)) * macs_per_output;
  return cost;
}

}  // namespace ofl
