// Helpers shared by op definitions: costs of op families, and the guard for ops without SBP rules.
#pragma once
#include <string>
#include <vector>

#include "core/op_def.h"

namespace ofl::internal {

// The metas of a call with one output (moved in: `return {{shape, ...}}` would copy the shape).
std::vector<TensorMeta> single_output(Shape shape, DType dtype, Device device);

// For computes whose kernels size their loops from the inputs: raises naming op when the
// allocated outputs do not have the shapes `infer` gives for these (local) inputs, as when a
// layout outside the op's signatures is forced on its shards (the SBP conformance checker does).
void require_output_shapes(const OpDef& def, const ComputeArgs& c);

// The device of a call's outputs: the inputs' one device (wrapped numbers and 0-d cpu tensors
// may join any device, as in PyTorch); raises naming the devices when they differ.
Device common_device(const InferArgs& a);

// The in-place form `name` of an out-of-place op (add_ of add): the same attributes, rule, cost
// and backward (its saved input 0 is self before the call); infer adds PyTorch's checks that the
// result fits self (same shape, a dtype that casts to self's), compute writes into self.
OpDef inplace_variant(const char* name, const OpDef& base);

// `def` with the autocast policy `a` (for ops a family's helper makes).
inline OpDef under_autocast(Autocast a, OpDef def) {
  def.autocast = a;
  return def;
}

// `def` with the public signatures `api` (for ops a family's helper makes).
inline OpDef with_api(std::vector<Api> api, OpDef def) {
  def.api = std::move(api);
  return def;
}
// "name(Tensor input) -> Tensor", running the op itself, as a function and a method.
Api unary_api(const std::string& name);
// "name(Tensor|Number input, Tensor|Number other) -> Tensor", the same.
Api binary_api(const std::string& name);

// Costs shared by op families.
OpCost elementwise_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype);
// Views move no data (a reshape that must copy is counted as free too: it is rare and local).
OpCost view_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype);
OpCost matmul_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype);
// inputs: (N, C, H, W) and weight (O, C / groups, kh, kw).
OpCost conv2d_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype);

}  // namespace ofl::internal
