// Helpers shared by op definitions: costs of op families, and the guard for ops without SBP rules.
#pragma once
#include <string>
#include <vector>

#include "core/op_def.h"

namespace ofl {

// For ops without an SBP rule yet: a global tensor raises instead of being computed on as if
// its shard were the whole tensor.
void require_local(const char* op, const Tensor& t);

// For computes whose kernels size their loops from the inputs: raises naming op when the
// allocated outputs do not have the shapes `infer` gives for these (local) inputs, as when a
// layout outside the op's signatures is forced on its shards (the SBP conformance checker does).
void require_output_shapes(const OpDef& def, const ComputeArgs& c);

// The device of a call's outputs: the inputs' one device (wrapped numbers and 0-d cpu tensors
// may join any device, as in PyTorch); raises naming the devices when they differ.
Device common_device(const InferArgs& a);

// Costs shared by op families.
OpCost elementwise_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype);
// Views move no data (a reshape that must copy is counted as free too: it is rare and local).
OpCost view_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype);
OpCost matmul_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype);
// inputs: (N, C, H, W) and weight (O, C / groups, kh, kw).
OpCost conv2d_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype);

}  // namespace ofl
