#include "graph/auto_parallel/layers.h"

#include <map>
#include <numeric>
#include <string_view>

namespace ofl::internal::auto_parallel {

using graph::Graph;
using graph::Node;
using graph::Value;

namespace {

// Attributes that only say which random draws an op takes (each layer draws its own) differ
// between copies of a layer; every other attribute must match.
bool same_attrs(const Attrs& a, const Attrs& b) {
  auto next = [](const auto& items, size_t i) {
    while (i < items.size() && (std::string_view(items[i].first) == "seed" ||
                                std::string_view(items[i].first) == "offset"))
      ++i;
    return i;
  };
  const auto &x = a.items(), &y = b.items();
  size_t i = next(x, 0), j = next(y, 0);
  for (; i < x.size() && j < y.size(); i = next(x, i + 1), j = next(y, j + 1))
    if (std::string_view(x[i].first) != y[j].first || x[i].second != y[j].second) return false;
  return i == x.size() && j == y.size();
}

// The same logical tensor on the same placement (its layout may differ: an edge from outside a
// layer is priced for each copy).
bool same_meta(const Value& a, const Value& b) {
  return a.shape == b.shape && a.dtype == b.dtype && a.placement == b.placement;
}

bool same_value(const Value& a, const Value& b) {
  return same_meta(a, b) && a.nd_sbp == b.nd_sbp;
}

}  // namespace

Repeats find_repeats(const Graph& g, bool copy) {
  const std::vector<Node>& nodes = g.nodes();
  const std::vector<Value>& values = g.values();
  Repeats r;
  r.node_rep.resize(nodes.size());
  std::iota(r.node_rep.begin(), r.node_rep.end(), 0);
  r.value_rep.resize(values.size());
  std::iota(r.value_rep.begin(), r.value_rep.end(), 0);
  r.value_layer.assign(values.size(), -1);
  r.copies.assign(nodes.size(), 1);

  // Each layer's nodes in order, each node's place in its layer, each value's producer.
  std::map<int, std::vector<int>> members;
  std::vector<int> position(nodes.size(), -1), producer(values.size(), -1), output(values.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    for (size_t j = 0; j < n.outputs.size(); ++j) {
      producer[size_t(n.outputs[j])] = int(i);
      output[size_t(n.outputs[j])] = int(j);
      r.value_layer[size_t(n.outputs[j])] = n.layer;
    }
    if (n.layer < 0) continue;
    std::vector<int>& layer = members[n.layer];
    position[i] = int(layer.size());
    layer.push_back(int(i));
  }
  // A variable belongs to a layer when only that layer's nodes read it.
  std::vector<bool> variable(values.size(), false), read(values.size(), false);
  for (const graph::Variable& v : g.variables()) variable[size_t(v.value)] = true;
  for (const Node& n : nodes)
    for (int v : n.inputs)
      if (v >= 0 && variable[size_t(v)]) {
        int& layer = r.value_layer[size_t(v)];
        layer = !read[size_t(v)] || layer == n.layer ? n.layer : -1;
        read[size_t(v)] = true;
      }

  // Whether layer k's nodes match layer rep's one for one; fills k's variables' counterparts.
  auto match = [&](int k, int rep, std::map<int, int>& var_map) {
    const std::vector<int>&a_nodes = members[k], &b_nodes = members[rep];
    if (a_nodes.size() != b_nodes.size()) return false;
    std::map<int, int> back;
    auto same_variable = [&](int a, int b) {
      auto [it, fresh] = var_map.try_emplace(a, b);
      auto [jt, fresh_back] = back.try_emplace(b, a);
      return it->second == b && jt->second == a && same_value(values[size_t(a)], values[size_t(b)]);
    };
    // Value a read in layer k where b is read in layer rep: from the same place.
    auto same_source = [&](int a, int b) {
      if ((a < 0) != (b < 0)) return false;
      if (a < 0) return true;
      const bool in_a = r.value_layer[size_t(a)] == k, in_b = r.value_layer[size_t(b)] == rep;
      if (in_a != in_b) return false;
      if (!in_a) return same_meta(values[size_t(a)], values[size_t(b)]);
      const int pa = producer[size_t(a)], pb = producer[size_t(b)];
      if (pa < 0 || pb < 0) return pa < 0 && pb < 0 && same_variable(a, b);
      return position[size_t(pa)] == position[size_t(pb)] && output[size_t(a)] == output[size_t(b)];
    };
    for (size_t p = 0; p < a_nodes.size(); ++p) {
      const Node &a = nodes[size_t(a_nodes[p])], &b = nodes[size_t(b_nodes[p])];
      if (a.kind != b.kind || a.op != b.op || a.param_grad != b.param_grad || a.axes != b.axes ||
          a.backward != b.backward || a.inputs.size() != b.inputs.size() ||
          a.outputs.size() != b.outputs.size() || !same_attrs(a.attrs, b.attrs) ||
          !same_source(a.grad_of, b.grad_of))
        return false;
      for (size_t j = 0; j < a.outputs.size(); ++j)
        if (!same_value(values[size_t(a.outputs[j])], values[size_t(b.outputs[j])])) return false;
      for (size_t j = 0; j < a.inputs.size(); ++j)
        if (!same_source(a.inputs[j], b.inputs[j])) return false;
    }
    return true;
  };

  std::vector<int> reps;
  for (const auto& [k, layer] : members) {
    ++r.layers;
    bool copied = false;
    for (int rep : copy ? reps : std::vector<int>{}) {
      std::map<int, int> var_map;
      if (!match(k, rep, var_map)) continue;
      for (size_t p = 0; p < layer.size(); ++p) {
        const int to = members[rep][p];
        r.node_rep[size_t(layer[p])] = to;
        ++r.copies[size_t(to)];
      }
      for (auto [a, b] : var_map) r.value_rep[size_t(a)] = b;
      ++r.copied_layers;
      copied = true;
      break;
    }
    if (!copied) reps.push_back(k);
  }
  return r;
}

}  // namespace ofl::internal::auto_parallel
