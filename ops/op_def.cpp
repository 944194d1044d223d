#include "ops/op_def.h"

#include <algorithm>

#include "core/error.h"

namespace ofl {

namespace {
std::vector<OpDef>& table() {
  static std::vector<OpDef> ops;
  return ops;
}
}  // namespace

bool register_ops(std::vector<OpDef> defs) {
  for (auto& def : defs) {
    OFL_CHECK(!find_op(def.name), "op registered twice: ", def.name);
    table().push_back(std::move(def));
  }
  return true;
}

const std::vector<OpDef>& registered_ops() {
  return table();
}

const OpDef* find_op(const std::string& name) {
  auto& ops = table();
  auto it = std::find_if(ops.begin(), ops.end(), [&](const OpDef& d) { return d.name == name; });
  return it == ops.end() ? nullptr : &*it;
}

void require_local(const char* op, const Tensor& t) {
  if (t.defined() && t.is_global())
    fail(op,
         "does not take global tensors yet (it has no SBP rule); got a global tensor whose local "
         "shard is ",
         t.str(), "; call to_local() or numpy() first");
}

OpCost elementwise_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype) {
  double elems = static_cast<double>(numel_of(output));
  for (const auto& s : inputs) elems += static_cast<double>(numel_of(s));
  return {static_cast<double>(numel_of(output)), elems * itemsize(dtype)};
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
