#include "graph/executor.h"

#include <algorithm>

#include "core/autograd/grad_mode.h"
#include "core/dispatcher.h"
#include "core/random.h"

namespace ofl::graph {

std::string signature_str(const Graph& g) {
  std::string s;
  for (size_t i = 0; i < g.inputs().size(); ++i)
    s += (i ? ", " : "") + value_str(g.values()[g.inputs()[i]]);
  return s;
}

int64_t peak_bytes(const Graph& g) {
  const size_t n = g.nodes().size(), nv = g.values().size();
  // The value whose memory each value uses (itself, or a view's or in-place write's base).
  std::vector<int> owner(nv);
  for (size_t v = 0; v < nv; ++v) owner[v] = static_cast<int>(v);
  std::vector<bool> computed(nv, false);
  for (const Node& node : g.nodes())
    for (size_t j = 0; j < node.outputs.size(); ++j) {
      const int out = node.outputs[j];
      const bool aliases = (node.op->view || (node.op->inplace && j == 0)) &&
                           !node.inputs.empty() && node.inputs[0] >= 0;
      if (aliases)
        owner[out] = owner[node.inputs[0]];
      else
        computed[out] = true;
    }
  // An owner's memory is freed after the last reader of any value over it.
  std::vector<size_t> end(nv, 0);
  for (size_t i = 0; i < n; ++i) {
    for (int id : g.nodes()[i].inputs)
      if (id >= 0) end[owner[id]] = std::max(end[owner[id]], i);
    for (int id : g.nodes()[i].outputs) end[owner[id]] = std::max(end[owner[id]], i);
  }
  for (int id : g.outputs()) end[owner[id]] = n;
  int64_t live = 0, peak = 0;
  std::vector<std::vector<int>> dies(n + 1);
  for (size_t v = 0; v < nv; ++v)
    if (computed[v]) dies[end[v]].push_back(static_cast<int>(v));
  auto bytes = [&](int v) {
    return numel_of(g.values()[v].shape) * static_cast<int64_t>(itemsize(g.values()[v].dtype));
  };
  for (size_t i = 0; i < n; ++i) {
    for (int id : g.nodes()[i].outputs)
      if (computed[id]) live += bytes(id);
    peak = std::max(peak, live);
    for (int v : dies[i]) live -= bytes(v);
  }
  return peak;
}

namespace {
bool is_output(const Graph& g, int id) {
  return std::find(g.outputs().begin(), g.outputs().end(), id) != g.outputs().end();
}
}  // namespace

std::vector<Tensor> run(const Graph& g, const std::vector<Tensor>& inputs) {
  if (inputs.size() != g.inputs().size())
    fail("graph", "expects ", g.inputs().size(), " inputs (", signature_str(g), "), got ",
         inputs.size());
  std::vector<Tensor> values(g.values().size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& want = g.values()[g.inputs()[i]];
    const Tensor& t = inputs[i];
    if (!t.defined() || t.is_global() || t.shape() != want.shape || t.dtype() != want.dtype ||
        t.device() != want.device)
      fail("graph", "input ", i, " is ", t.defined() ? t.str() : "None", ", expected ",
           value_str(want), " (the graph's inputs: ", signature_str(g), ")");
    values[g.inputs()[i]] = t;
  }
  for (const Variable& v : g.variables()) values[v.value] = v.tensor;
  // Each value is dropped after its last reader, so that memory is freed as in eager mode.
  std::vector<size_t> last_read(g.values().size(), g.nodes().size());
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (int id : g.nodes()[i].inputs)
      if (id >= 0) last_read[id] = i;
  for (int id : g.outputs()) last_read[id] = g.nodes().size();
  autograd::NoGradGuard no_grad;
  std::vector<Tensor> in;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    in.clear();
    for (int id : n.inputs) in.push_back(id < 0 ? Tensor() : values[id]);
    std::vector<Tensor> out;
    if (n.random_counters) {
      Generator& g = default_generator();
      Attrs attrs = n.attrs;
      attrs.set("seed", static_cast<int64_t>(g.seed()));
      attrs.set("offset", static_cast<int64_t>(g.advance(n.random_counters)));
      out = dispatch(*n.op, in, attrs);
    } else {
      out = dispatch(*n.op, in, n.attrs);
    }
    for (size_t j = 0; j < n.outputs.size(); ++j) values[n.outputs[j]] = std::move(out[j]);
    in.clear();
    for (int id : n.inputs)
      if (id >= 0 && last_read[id] == i) values[id] = Tensor();
    for (int id : n.outputs)
      if (last_read[id] == g.nodes().size() && !is_output(g, id)) values[id] = Tensor();
  }
  std::vector<Tensor> result;
  for (int id : g.outputs()) result.push_back(values[id]);
  return result;
}

}  // namespace ofl::graph
