#include "ops/op_helpers.h"

#include <numeric>

#include "core/dispatcher.h"
#include "core/error.h"
#include "core/primitives.h"

namespace ofl::internal {

std::vector<TensorMeta> single_output(Shape shape, DType dtype, Device device) {
  std::vector<TensorMeta> out(1);
  out[0].shape = std::move(shape);
  out[0].dtype = dtype;
  out[0].device = device;
  return out;
}

void require_output_shapes(const OpDef& def, const ComputeArgs& c) {
  std::vector<TensorMeta> in;
  for (const Tensor& t : c.in) in.push_back(meta_of(t));
  if (c.streamed)  // a streamed input is checked as the whole its blocks make
    for (size_t i = 0; i < in.size() && i < c.streamed->size(); ++i)
      if (const StreamedBlocks& s = (*c.streamed)[i]; s.group)
        in[i].shape[size_t(def.streamed_dim)] =
            std::accumulate(s.lengths.begin(), s.lengths.end(), int64_t{0});
  const std::vector<TensorMeta> want = def.infer({def.name.c_str(), in, c.attrs});
  for (size_t j = 0; j < want.size() && j < c.out.size(); ++j) {
    if (want[j].shape == c.out[j].shape()) continue;
    std::string inputs;
    for (const TensorMeta& m : in) inputs += (inputs.empty() ? "" : ", ") + m.str();
    fail(def.name.c_str(), "output ", j, " has shape ", shape_str(c.out[j].shape()),
         " but its inputs ", inputs, " give ", shape_str(want[j].shape),
         " (shards laid out inconsistently)");
  }
}

Api unary_api(const std::string& name) {
  return {.schema = name + "(Tensor input) -> Tensor"};
}

Api binary_api(const std::string& name) {
  return {.schema = name + "(Tensor|Number input, Tensor|Number other) -> Tensor"};
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

OpDef inplace_variant(const char* name, const OpDef& base) {
  OpDef def = base;
  def.name = name;
  def.api.clear();  // the in-place form's signature is its own
  def.inplace = true;
  def.elementwise = nullptr;  // a fused program writes fresh outputs only
  def.infer = [infer = base.infer](const InferArgs& a) {
    std::vector<TensorMeta> out = infer(a);
    const TensorMeta& self = a.in[0];
    if (out[0].shape != self.shape)
      fail(a.op, "the output of shape ", shape_str(self.shape),
           " does not match the broadcast shape ", shape_str(out[0].shape));
    const DType dt = out[0].dtype;
    if ((is_floating(dt) && !is_floating(self.dtype)) ||
        (dt != DType::kBool && self.dtype == DType::kBool))
      fail<TypeError>(a.op, "result type ", dtype_name(dt),
                      " can't be cast to the in-place output type ", dtype_name(self.dtype));
    // A 0-d host self follows the others' device in the base op (common_device), but is written
    // where it is: the host kernel would read the others' device memory.
    if (out[0].device != self.device)
      fail(a.op, "the written-to tensor is on ", self.device.str(), " but the other operands on ",
           out[0].device.str());
    out[0] = {self.shape, self.dtype, self.device};
    return out;
  };
  // The base op's compute into self, through a buffer of its result dtype where that differs.
  def.compute = [name, infer = base.infer, compute = base.compute](const ComputeArgs& c) {
    const Tensor& self = c.out[0];
    std::vector<TensorMeta> in;
    for (const Tensor& t : c.in) in.push_back(meta_of(t));
    const DType dt = infer({name, in, c.attrs})[0].dtype;
    if (dt == self.dtype()) {
      compute({c.in, {self}, c.attrs});
      return;
    }
    const Tensor tmp = Tensor::empty(self.shape(), dt, self.device());
    compute({c.in, {tmp}, c.attrs});
    copy_kernel().get(self.device().type)(tmp, self);
  };
  return def;
}

OpCost view_cost(const std::vector<Shape>&, const Shape&, DType) {
  return {};
}

OpCost matmul_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype) {
  const Shape& a = inputs.at(0);
  const Shape b = inputs.size() > 1 ? inputs[1] : Shape{};
  const double k = a.empty() ? 1 : static_cast<double>(a.back());
  const double elems = static_cast<double>(numel_of(output));
  auto cost = elementwise_cost(inputs, output, dtype);
  cost.flops = 2.0 * elems * k;
  if (elems == 0) return cost;
  // As the library runs it: a matrix b (a linear's weight) takes the batch as rows of one GEMM,
  // a batched b multiplies batch by batch.
  const double n = b.size() >= 2 ? static_cast<double>(output.back()) : 1;
  const double m = b.size() <= 2 ? elems / n : static_cast<double>(a.size() >= 2 ? a.end()[-2] : 1);
  cost.gemm = {elems / (m * n), m, n, k};
  return cost;
}

OpCost conv2d_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype) {
  const Shape& w = inputs.at(1);
  double macs_per_output = w.size() == 4 ? static_cast<double>(w[1] * w[2] * w[3]) : 1.0;
  auto cost = elementwise_cost(inputs, output, dtype);
  cost.flops = 2.0 * static_cast<double>(numel_of(output)) * macs_per_output;
  // An implicit GEMM: a row per output pixel, a column per output channel.
  if (w.size() == 4 && output.size() == 4 && output[1] > 0)
    cost.gemm = {1, static_cast<double>(numel_of(output) / output[1]),
                 static_cast<double>(output[1]), macs_per_output};
  return cost;
}

}  // namespace ofl::internal
