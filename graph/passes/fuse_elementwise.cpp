// Fuses chains of elementwise ops into one `_fused_elementwise` node each (ops/fused.h).
//
// A node joins the group of a fusable node whose output it reads when it has the group's shape,
// dtype, device, placement and place in the step (phase, layer, stage, micro-batch), and when
// every other value it reads was there before the group's first node, or is a small constant
// made after it (which moves before it): the fused node takes that node's place, so it reads
// nothing computed later and its outputs come no later than its members' did. A group's outputs are
// the values its members compute that anything else reads (or the graph returns); the rest never
// reach memory.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "graph/passes/passes.h"
#include "ops/fused.h"

namespace ofl::internal::graph {

namespace {

struct Group {
  std::vector<size_t> members;  // node indices, in graph order
  std::vector<int> inputs;      // values read from outside, in first-read order
  std::vector<size_t> hoisted;  // constants made after the first member, moved before it
};

// The most bytes of a constant (a node that reads nothing and draws nothing: full, arange) that
// the pass moves before a chain reading it, holding it that much longer.
constexpr int64_t kMaxHoistedBytes = 1 << 16;

bool same_place(const Node& a, const Node& b) {
  return a.backward == b.backward && a.layer == b.layer && a.stage == b.stage && a.micro == b.micro;
}

class Fuser {
 public:
  Fuser(const Graph& g, const FusionOptions& options)
      : g_(g),
        options_(options),
        owner_(memory_owner(g)),
        producer_(g.values().size(), -1),
        group_of_(g.values().size(), -1),
        steps_(g.nodes().size()),
        fusable_(g.nodes().size(), false) {
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      for (int id : g.nodes()[i].outputs) producer_[id] = int64_t(i);
      fusable_[i] = fusable(g.nodes()[i], steps_[i]);
    }
  }

  Graph run() {
    for (size_t i = 0; i < g_.nodes().size(); ++i)
      if (fusable_[i]) place(i);
    return emit();
  }

 private:
  // An elementwise op with one output of a floating dtype that each input broadcasts to, laid
  // out as its signature takes and gives them.
  bool fusable(const Node& n, ElementwiseStep& step) const {
    if (n.kind != NodeKind::kOp || n.op->inplace || !n.op->elementwise || n.random_counters ||
        n.outputs.size() != 1 || !n.op->elementwise(n.attrs, step))
      return false;
    const Value& out = value(n.outputs[0]);
    if (!is_floating(out.dtype)) return false;
    if (out.is_global() && (n.sig.out.size() != 1 || n.sig.out[0] != out.nd_sbp)) return false;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (n.inputs[k] < 0) return false;
      const Value& in = value(n.inputs[k]);
      if (in.device != out.device || in.shape.size() > out.shape.size()) return false;
      if (in.is_global() && (n.sig.in.size() != n.inputs.size() || n.sig.in[k] != in.nd_sbp))
        return false;
    }
    return true;
  }

  const Value& value(int id) const { return g_.values()[size_t(id)]; }

  // Whether node i can join group k.
  bool joins(size_t i, int k) const {
    const Group& group = groups_[size_t(k)];
    const Node& n = g_.nodes()[i];
    const Node& head = g_.nodes()[group.members[0]];
    const Value &v = value(n.outputs[0]), &h = value(head.outputs[0]);
    if (!same_place(n, head) || v.shape != h.shape || v.dtype != h.dtype || v.device != h.device ||
        v.placement != h.placement)
      return false;
    const size_t first = group.members[0];
    size_t fresh = 0, walked_fresh = 0;
    for (int id : n.inputs) {
      // a value written in place since the chain began (an input, or a member's output) is read
      // as written here, but the fused node would read it before
      if (written_between(id, first, i)) return false;
      if (group_of_[id] == k) continue;
      // computed after the group starts: only a constant can move before it
      if (producer_[id] >= int64_t(first) && !constant(size_t(producer_[id]))) return false;
      if (std::find(group.inputs.begin(), group.inputs.end(), id) != group.inputs.end()) continue;
      ++fresh;
      walked_fresh += walked(value(id).shape);
    }
    // room for its register and, with one output at least, its operands
    return group.inputs.size() + fresh + group.members.size() + 1 <= size_t(kMaxFusedRegisters) &&
           walked_inputs(group) + walked_fresh + 1 <= size_t(kMaxFusedOperands);
  }

  size_t walked_inputs(const Group& group) const {
    return size_t(std::count_if(group.inputs.begin(), group.inputs.end(),
                                [&](int id) { return walked(value(id).shape); }));
  }

  // Whether node i makes a small constant: an op that reads and draws nothing.
  bool constant(size_t i) const {
    const Node& n = g_.nodes()[i];
    if (n.kind != NodeKind::kOp || n.op->inplace || n.random_counters || n.outputs.size() != 1)
      return false;
    for (int id : n.inputs)
      if (id >= 0) return false;
    return bytes_per_rank(value(n.outputs[0])) <= kMaxHoistedBytes;
  }

  // Whether an in-place op after node `from` and before node `to` writes value id's memory (the
  // fused node reads it where `from` was).
  bool written_between(int id, size_t from, size_t to) const {
    for (size_t j = from + 1; j < to; ++j) {
      const Node& w = g_.nodes()[j];
      if (writes_in_place(w) && owner_[size_t(w.inputs[0])] == owner_[size_t(id)]) return true;
    }
    return false;
  }

  // An add or subtraction, which config.allow_fuse_add_to_output(False) keeps from joining.
  bool adds(size_t i) const {
    const Node& n = g_.nodes()[i];
    return n.op->name == "add" || n.op->name == "sub";
  }

  void place(size_t i) {
    const Node& n = g_.nodes()[i];
    int k = -1;
    const bool may_join = options_.add_to_output || !adds(i);
    for (int id : n.inputs)
      if (may_join && group_of_[id] >= 0 && joins(i, group_of_[id])) {
        k = group_of_[id];
        break;
      }
    if (k < 0) {
      k = int(groups_.size());
      groups_.emplace_back();
    }
    Group& group = groups_[size_t(k)];
    group.members.push_back(i);
    for (int id : n.inputs) {
      if (group_of_[id] == k ||
          std::find(group.inputs.begin(), group.inputs.end(), id) != group.inputs.end())
        continue;
      group.inputs.push_back(id);
      if (producer_[id] > int64_t(group.members[0])) group.hoisted.push_back(size_t(producer_[id]));
    }
    group_of_[n.outputs[0]] = k;
  }

  // The values of group k read outside it, or returned.
  std::vector<int> outputs_of(int k) const {
    std::vector<int> out;
    auto add = [&](int id) {
      if (group_of_[id] == k && std::find(out.begin(), out.end(), id) == out.end())
        out.push_back(id);
    };
    for (size_t j = 0; j < g_.nodes().size(); ++j) {
      const Node& n = g_.nodes()[j];
      if (fusable_[j] && group_of_[n.outputs[0]] == k) continue;
      for (int id : n.inputs)
        if (id >= 0) add(id);
    }
    for (int id : g_.outputs()) add(id);
    return out;
  }

  Node fused_node(int k, const std::vector<int>& outputs) const {
    const Group& group = groups_[size_t(k)];
    const Node& head = g_.nodes()[group.members[0]];
    const Value& shape_of = value(head.outputs[0]);
    FusedProgram p;
    p.inputs = int32_t(group.inputs.size());
    p.shape = shape_of.shape;
    p.dtype = shape_of.dtype;
    std::vector<int> reg(g_.values().size(), -1);
    for (size_t r = 0; r < group.inputs.size(); ++r) reg[group.inputs[r]] = int(r);
    Node fused = op_node(op_def("_fused_elementwise"), group.inputs, outputs);
    place_like(fused, head);
    if (shape_of.is_global()) fused.sig.in.resize(group.inputs.size());
    std::string parts;
    for (size_t m : group.members) {
      const Node& n = g_.nodes()[m];
      FusedStep s{steps_[m]};
      int32_t* operand[3] = {&s.a, &s.b, &s.c};
      // where(c, a, b) reads c first
      const int order[3] = {2, 0, 1};
      const bool where = s.op.family == ElementwiseStep::kWhere;
      for (size_t q = 0; q < n.inputs.size(); ++q) {
        *operand[where ? order[q] : q] = reg[n.inputs[q]];
        const auto r = std::find(group.inputs.begin(), group.inputs.end(), n.inputs[q]);
        if (shape_of.is_global() && r != group.inputs.end())
          fused.sig.in[size_t(r - group.inputs.begin())] = n.sig.in[q];
      }
      reg[n.outputs[0]] = p.registers();
      p.steps.push_back(s);
      parts +=
          (parts.empty() ? "%" : "; %") + std::to_string(n.outputs[0]) + " = " + n.name() + "(";
      for (size_t q = 0; q < n.inputs.size(); ++q)
        parts += (q ? ", %" : "%") + std::to_string(n.inputs[q]);
      parts += ")";
    }
    for (int id : outputs) {
      p.outputs.push_back(reg[id]);
      if (shape_of.is_global()) fused.sig.out.push_back(value(id).nd_sbp);
    }
    fused.attrs = p.attrs();
    fused.attrs.set("parts", std::move(parts));
    return fused;
  }

  // Whether fusing the group keeps a value of it from memory. On the CPU a group whose every
  // value is read outside it (a residual sum kept for later and its GELU) saves only re-reads,
  // and ran slower fused than as the ops apart, whose kernels stream (benchmarks/bench_fusion.py:
  // 0.84x to 0.88x); on a GPU the launches it saves still pay.
  bool saves_memory(const Group& group, const std::vector<int>& outputs) const {
    const Value& v = value(g_.nodes()[group.members[0]].outputs[0]);
    return v.device.type != DeviceType::kCPU || outputs.size() < group.members.size();
  }

  Graph emit() const {
    const size_t n = g_.nodes().size();
    std::vector<int> fused_at(n, -1);  // the fused node that replaces node i
    std::vector<bool> dropped(n, false);
    std::vector<size_t> hoisted_to(n, n);  // where a constant moves (the earliest chain's start)
    std::vector<Node> made;
    for (int k = 0; k < int(groups_.size()); ++k) {
      const Group& group = groups_[size_t(k)];
      if (group.members.size() < 2) continue;
      const std::vector<int> outputs = outputs_of(k);
      if (outputs.empty() || walked_inputs(group) + outputs.size() > size_t(kMaxFusedOperands) ||
          !saves_memory(group, outputs))
        continue;
      fused_at[group.members[0]] = int(made.size());
      made.push_back(fused_node(k, outputs));
      for (size_t m : group.members) dropped[m] = true;
      for (size_t c : group.hoisted) hoisted_to[c] = std::min(hoisted_to[c], group.members[0]);
    }
    std::vector<std::vector<size_t>> hoisted_before(n);
    for (size_t c = 0; c < n; ++c)
      if (hoisted_to[c] < n) hoisted_before[hoisted_to[c]].push_back(c);
    Graph out = g_.without_nodes();
    for (size_t i = 0; i < n; ++i) {
      for (size_t c : hoisted_before[i]) out.add_node(g_.nodes()[c]);
      if (fused_at[i] >= 0) out.add_node(made[size_t(fused_at[i])]);
      if (!dropped[i] && hoisted_to[i] == n) out.add_node(g_.nodes()[i]);
    }
    return out;
  }

  const Graph& g_;
  const FusionOptions& options_;
  std::vector<int> owner_;
  std::vector<int64_t> producer_;  // node computing each value, -1 for inputs and variables
  std::vector<int> group_of_;      // group computing each value, -1 for none
  std::vector<ElementwiseStep> steps_;
  std::vector<bool> fusable_;
  std::vector<Group> groups_;
};

}  // namespace

bool fusion_enabled() {
  const char* env = std::getenv("OFL_GRAPH_FUSION");
  return !env || std::string(env) != "0";
}

Graph fuse_elementwise(const Graph& g, const FusionOptions& options) {
  return Fuser(g, options).run();
}

}  // namespace ofl::internal::graph
