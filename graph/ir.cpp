#include "graph/ir.h"

#include <sstream>

#include "sbp/global_info.h"

namespace ofl::internal::graph {

int Graph::add_value(Value v) {
  values_.push_back(std::move(v));
  return static_cast<int>(values_.size()) - 1;
}

int Graph::add_input(Value v) {
  const int id = add_value(std::move(v));
  inputs_.push_back(id);
  return id;
}

Value value_like(const Tensor& t) {
  if (!t.is_global()) return {t.shape(), t.dtype(), t.device(), std::nullopt, {}};
  const GlobalInfo& g = *t.impl()->global;
  return {g.shape, t.dtype(), t.device(), g.placement, g.nd_sbp};
}

int Graph::add_variable(const Tensor& t) {
  const int id = add_value(value_like(t));
  variables_.push_back({id, t});
  return id;
}

void Graph::add_node(Node n) {
  nodes_.push_back(std::move(n));
}

std::string Node::name() const {
  switch (kind) {
    case NodeKind::kOp:
      return op->name;
    case NodeKind::kBoxing:
      return "boxing";
    case NodeKind::kReduce:
      return "reduce";
    case NodeKind::kGather:
      return "gather";
  }
  return "?";
}

std::vector<int> memory_owner(const Graph& g) {
  std::vector<int> owner(g.values().size());
  for (size_t v = 0; v < owner.size(); ++v) owner[v] = int(v);
  for (const Node& n : g.nodes())
    for (size_t j = 0; j < n.outputs.size(); ++j)
      if (n.kind == NodeKind::kOp && !n.inputs.empty() && n.inputs[0] >= 0 &&
          (n.op->view || (n.op->inplace && j == 0)))
        owner[size_t(n.outputs[j])] = owner[size_t(n.inputs[0])];
  return owner;
}

int64_t bytes_per_rank(const Value& v) {
  return bytes_per_rank(v, v.nd_sbp);
}

int64_t bytes_per_rank(const Value& v, const NdSbp& nd_sbp) {
  Shape shape = v.shape;
  if (v.is_global() && !nd_sbp.empty())  // rank 0's shard: uneven splits give it the larger
    shape = local_shape(v.shape, nd_sbp, *v.placement,
                        std::vector<int64_t>(v.placement->mesh().size(), 0));
  return numel_of(shape) * static_cast<int64_t>(itemsize(v.dtype));
}

std::string value_str(const Value& v) {
  std::string s = shape_str(v.shape) + " " + dtype_name(v.dtype) + " " + v.device.str();
  if (v.is_global())
    s += " " + (v.nd_sbp.empty() ? std::string("[?]") : v.nd_sbp.str()) + " on " +
         v.placement->str();
  return s;
}

namespace {
std::string ids(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + (v[i] < 0 ? std::string("none") : "%" + std::to_string(v[i]));
  return s;
}
}  // namespace

std::string Graph::str() const {
  std::ostringstream os;
  for (size_t i = 0; i < inputs_.size(); ++i)
    os << "%" << inputs_[i] << " = input " << i << " : " << value_str(values_[inputs_[i]]) << "\n";
  for (const Variable& v : variables_)
    os << "%" << v.value << " = variable : " << value_str(values_[v.value]) << "\n";
  bool backward = false;
  for (const Node& n : nodes_) {
    if (n.backward != backward) os << (n.backward ? "# backward\n" : "# after backward\n");
    backward = n.backward;
    os << ids(n.outputs) << " = " << n.name() << "(" << ids(n.inputs);
    // A fused node (passes/fuse_elementwise) prints the ops it runs instead of its program.
    if (const AttrValue* parts = n.attrs.find("parts"))
      os << ") [" << std::get<std::string>(*parts) << "]";
    else if (!n.attrs.items().empty())
      os << "; " << n.attrs.str() << ")";
    else
      os << ")";
    os << " :";
    for (size_t j = 0; j < n.outputs.size(); ++j)
      os << (j ? ", " : " ") << value_str(values_[n.outputs[j]]);
    os << "\n";
  }
  os << "return " << ids(outputs_);
  return os.str();
}

}  // namespace ofl::internal::graph
