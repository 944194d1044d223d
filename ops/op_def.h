// What every op declares besides its kernels: its name, arity, differentiability and cost,
// plus the slot for its SBP rule. The planner, the cost model and the SBP conformance
// checker enumerate ops through this registry.
#pragma once
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/shape.h"
#include "core/tensor.h"

namespace ofl {

// Work of one call on one device, for the roofline cost model.
struct OpCost {
  double flops = 0;
  double bytes = 0;  // read + written
};
using CostFn = OpCost (*)(const std::vector<Shape>& inputs, const Shape& output, DType dtype);

// The 1-d SBP signatures an op accepts; defined by the global-tensor issue (sbp/).
struct SbpRule;

struct OpDef {
  std::string name;
  int num_inputs = 1;  // tensor inputs, weights and indices included; -1: a list of tensors
  bool differentiable = true;
  CostFn cost = nullptr;
  const SbpRule* sbp = nullptr;  // null: only the all-broadcast signature
};

// Registers ops at load time; a second registration of the same name is a bug.
bool register_ops(std::vector<OpDef> defs);
const std::vector<OpDef>& registered_ops();
const OpDef* find_op(const std::string& name);

// For ops without an SBP rule yet: a global tensor raises instead of being computed on as if
// its shard were the whole tensor.
void require_local(const char* op, const Tensor& t);

// Costs shared by op families.
OpCost elementwise_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype);
OpCost matmul_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype);
// inputs: (N, C, H, W) and weight (O, C / groups, kh, kw).
OpCost conv2d_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype);

#define OFL_CONCAT_INNER(a, b) a##b
#define OFL_CONCAT(a, b) OFL_CONCAT_INNER(a, b)
// OFL_REGISTER_OPS({{.name = "add", .num_inputs = 2, .cost = elementwise_cost}, ...});
#define OFL_REGISTER_OPS(...) \
  static const bool OFL_CONCAT(ofl_ops_registered_, __LINE__) = ::ofl::register_ops(__VA_ARGS__)

}  // namespace ofl
