// Over 600 lines: the IR to JSON and back, each field's writer beside its reader.
#include "graph/serialize.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "boxing/reshard.h"
#include "core/dispatcher.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "global/checkpoint.h"
#include "ops/creation.h"

namespace ofl::internal::graph {

namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string ints(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string ids(const std::vector<int>& v) {
  return ints(std::vector<int64_t>(v.begin(), v.end()));
}

// {"type": "ints", "value": [1, 2]}: the type keeps what JSON alone would blur (int vs float).
std::string attr_json(const AttrValue& v) {
  std::ostringstream os;
  os << "{\"type\": " << quoted(attr_type_name(static_cast<AttrType>(v.index())))
     << ", \"value\": ";
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          os << (x ? "true" : "false");
        } else if constexpr (std::is_same_v<T, int64_t>) {
          os << x;
        } else if constexpr (std::is_same_v<T, double>) {
          char buf[32];
          std::snprintf(buf, sizeof buf, "%.17g", x);
          os << buf;
        } else if constexpr (std::is_same_v<T, std::string>) {
          os << quoted(x);
        } else if constexpr (std::is_same_v<T, DType>) {
          os << quoted(dtype_name(x));
        } else {
          os << ints(x);
        }
      },
      v);
  os << "}";
  return os.str();
}

}  // namespace

std::string variable_name(const Variable& v) {
  return "v" + std::to_string(v.value);
}

std::string to_json(const Graph& g) {
  std::ostringstream os;
  os << "{\n  \"format_version\": " << kGraphFormatVersion << ",\n  \"values\": [";
  for (size_t i = 0; i < g.values().size(); ++i) {
    const Value& v = g.values()[i];
    os << (i ? ",\n    " : "\n    ") << "{\"shape\": " << ints(v.shape)
       << ", \"dtype\": " << quoted(dtype_name(v.dtype))
       << ", \"device\": " << quoted(v.device.str());
    if (v.is_global()) {
      std::vector<int64_t> ranks(v.placement->ranks().begin(), v.placement->ranks().end());
      os << ", \"placement\": {\"ranks\": " << ints(ranks)
         << ", \"mesh\": " << ints(v.placement->mesh()) << "}, \"sbp\": " << quoted(v.nd_sbp.str());
    }
    os << "}";
  }
  os << "\n  ],\n  \"inputs\": " << ids(g.inputs()) << ",\n  \"variables\": [";
  for (size_t i = 0; i < g.variables().size(); ++i) {
    const Variable& v = g.variables()[i];
    os << (i ? ", " : "") << "{\"value\": " << v.value << ", \"name\": " << quoted(variable_name(v))
       << "}";
  }
  os << "],\n  \"nodes\": [";
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    os << (i ? ",\n    " : "\n    ") << "{\"op\": " << quoted(n.name()) << ", \"attrs\": {";
    const auto& items = n.attrs.items();
    for (size_t a = 0; a < items.size(); ++a)
      os << (a ? ", " : "") << quoted(items[a].first) << ": " << attr_json(items[a].second);
    os << "}, \"inputs\": " << ids(n.inputs) << ", \"outputs\": " << ids(n.outputs)
       << ", \"random_counters\": " << n.random_counters;
    if (n.replays_draws) os << ", \"replays_draws\": true";
    // Where the tracer saw it (the planner's and the passes' marks), where anywhere.
    if (n.backward) os << ", \"backward\": true";
    if (n.layer >= 0) os << ", \"layer\": " << n.layer;
    if (n.stage >= 0) os << ", \"stage\": " << n.stage;
    if (n.micro >= 0) os << ", \"micro\": " << n.micro;
    if (n.param_grad) os << ", \"param_grad\": true";
    if (n.grad_of >= 0) os << ", \"grad_of\": " << n.grad_of;
    if (n.kind != NodeKind::kOp) os << ", \"kind\": " << quoted(n.name());
    if (n.kind == NodeKind::kReduce || n.kind == NodeKind::kGather)
      os << ", \"axes\": " << ints(n.axes);
    if (!n.sig.in.empty() || !n.sig.out.empty()) {
      auto sbps = [&](const std::vector<NdSbp>& v) {
        std::string out = "[";
        for (size_t k = 0; k < v.size(); ++k) out += (k ? ", " : "") + quoted(v[k].str());
        return out + "]";
      };
      os << ", \"sig\": {\"in\": " << sbps(n.sig.in) << ", \"out\": " << sbps(n.sig.out) << "}";
    }
    os << "}";
  }
  os << "\n  ],\n  \"outputs\": " << ids(g.outputs()) << "\n}\n";
  return os.str();
}

namespace {

using Json = nlohmann::json;

// A reader of one graph.json that raises naming the file and the entry.
struct Reader {
  const std::string& where;
  int64_t batch = 0;               // the batch to build the graph for; 0: the one it was saved at
  const Device* device = nullptr;  // where its values live; null: where they were saved

  // "batch": [[index, k], ...]: the entries of a shape or an integer attribute that are k times
  // the batch (what graph.save found by tracing at two batch sizes).
  std::vector<std::pair<size_t, int64_t>> batch_marks(const Json& j, size_t size,
                                                      const std::string& what) const {
    std::vector<std::pair<size_t, int64_t>> out;
    if (!j.contains("batch")) return out;
    const Json& marks = j["batch"];
    if (!marks.is_array()) bad(what, "'s batch is not a list of [index, factor]");
    for (const Json& m : marks) {
      const std::vector<int64_t> pair = ints(m, what + "'s batch entry");
      if (pair.size() != 2 || pair[0] < 0 || pair[0] >= int64_t(size) || pair[1] < 1)
        bad(what, "'s batch entry ", m.dump(), " is not [index < ", size, ", factor >= 1]");
      out.emplace_back(size_t(pair[0]), pair[1]);
    }
    return out;
  }
  void rebatch(std::vector<int64_t>& v, const Json& j, const std::string& what) const {
    for (auto [i, k] : batch_marks(j, v.size(), what))
      if (batch) v[i] = k * batch;
  }

  template <class... Args>
  [[noreturn]] void bad(const Args&... args) const {
    fail("load", where, ": ", args...);
  }
  const Json& at(const Json& j, const char* key, const std::string& what) const {
    if (!j.is_object() || !j.contains(key)) bad(what, " has no \"", key, "\"");
    return j[key];
  }
  std::vector<int64_t> ints(const Json& j, const std::string& what) const {
    if (!j.is_array()) bad(what, " is not a list of integers");
    std::vector<int64_t> out;
    for (const Json& v : j) {
      if (!v.is_number_integer()) bad(what, " is not a list of integers");
      out.push_back(v.get<int64_t>());
    }
    return out;
  }
  std::vector<int> ids(const Json& j, const std::string& what, size_t values) const {
    std::vector<int> out;
    for (int64_t v : ints(j, what)) {
      if (v < -1 || v >= int64_t(values)) bad(what, " names value ", v, " of ", values);
      out.push_back(int(v));
    }
    return out;
  }
  std::string string(const Json& j, const std::string& what) const {
    if (!j.is_string()) bad(what, " is not a string");
    return j.get<std::string>();
  }

  Value value(const Json& j, size_t i) const {
    const std::string what = "value " + std::to_string(i);
    Value v;
    v.shape = ints(at(j, "shape", what), what + "'s shape");
    rebatch(v.shape, j, what);
    try {
      v.dtype = dtype_from_name(string(at(j, "dtype", what), what + "'s dtype"));
      v.device = Device::parse(string(at(j, "device", what), what + "'s device"));
    } catch (const Error& e) {
      bad(what, ": ", e.what());
    }
    if (device) v.device = *device;
    if (j.contains("placement")) {
      const Json& p = j["placement"];
      std::vector<int> ranks;
      for (int64_t r : ints(at(p, "ranks", what + "'s placement"), what + "'s ranks"))
        ranks.push_back(int(r));
      try {
        v.placement = Placement(v.device.type, ranks, ints(at(p, "mesh", what), what + "'s mesh"));
        v.nd_sbp = sbp(at(j, "sbp", what), what + "'s sbp");
      } catch (const Error& e) {
        bad(what, ": ", e.what());
      }
    }
    return v;
  }

  NdSbp sbp(const Json& j, const std::string& what) const {
    const std::string text = string(j, what);
    if (text == NdSbp().str()) return {};  // a traced value the SBP pass has not laid out yet
    try {
      return NdSbp::parse(text);
    } catch (const Error& e) {
      bad(what, ": ", e.what());
    }
  }

  AttrValue attr(const Json& j, AttrType type, const std::string& what) const {
    const std::string tag = string(at(j, "type", what), what + "'s type");
    if (tag != attr_type_name(type))
      bad(what, " is a ", tag, " where the op declares a ", attr_type_name(type));
    const Json& v = at(j, "value", what);
    switch (type) {
      case AttrType::kBool:
        if (v.is_boolean()) return v.get<bool>();
        break;
      case AttrType::kInt:
        if (v.is_number_integer()) {
          std::vector<int64_t> one{v.get<int64_t>()};
          rebatch(one, j, what);
          return one[0];
        }
        break;
      case AttrType::kFloat:
        if (v.is_number()) return v.get<double>();
        break;
      case AttrType::kString:
        return string(v, what);
      case AttrType::kDType:
        try {
          return dtype_from_name(string(v, what));
        } catch (const Error& e) {
          bad(what, ": ", e.what());
        }
      case AttrType::kInts: {
        std::vector<int64_t> out = ints(v, what);
        rebatch(out, j, what);
        return out;
      }
    }
    bad(what, " does not hold a ", attr_type_name(type));
  }

  Node node(const Json& j, size_t i, size_t values) const {
    const std::string what = "node " + std::to_string(i);
    const std::string name = string(at(j, "op", what), what + "'s op");
    Node n;
    if (j.contains("sig")) {
      const Json& sig = j["sig"];
      for (const char* side : {"in", "out"}) {
        const Json& list = at(sig, side, what + "'s sig");
        if (!list.is_array()) bad(what, "'s sig.", side, " is not a list");
        for (const Json& x : list)
          (side[0] == 'i' ? n.sig.in : n.sig.out).push_back(sbp(x, what + "'s sig"));
      }
    }
    marks(j, n, what, values);
    if (j.contains("kind")) return collective(j, n, name, what, values);
    const OpDef* op = find_op(name);
    if (!op)
      bad(what, " runs '", name, "', which is not an op of this build (only local op graphs load)");
    n.op = op;
    const Json& attrs = at(j, "attrs", what);
    if (!attrs.is_object()) bad(what, "'s attrs are not an object");
    for (const auto& [key, value] : attrs.items()) {
      const AttrDef* def = nullptr;
      for (const AttrDef& d : op->attrs)
        if (key == d.name) def = &d;
      if (!def)
        bad(what, " (", name, ") has attribute '", key, "', which ", name, " does not declare");
      n.attrs.set(def->name, attr(value, def->type, what + " (" + name + ") attribute " + key));
    }
    n.inputs = ids(at(j, "inputs", what), what + "'s inputs", values);
    n.outputs = ids(at(j, "outputs", what), what + "'s outputs", values);
    const Json& counters = at(j, "random_counters", what);
    if (!counters.is_number_unsigned()) bad(what, "'s random_counters is not a count");
    n.random_counters = counters.get<uint64_t>();
    // The executor draws fresh counters for a random node through its seed and offset.
    if (n.random_counters && !(n.attrs.has("seed") && n.attrs.has("offset")))
      bad(what, " (", name, ") draws ", n.random_counters,
          " random counters but has no seed and offset attributes");
    if (j.contains("replays_draws") && !j["replays_draws"].is_boolean())
      bad(what, "'s replays_draws is not true or false");
    n.replays_draws = j.value("replays_draws", false);
    return n;
  }

  // The tracer's marks to_json writes where they are set.
  void marks(const Json& j, Node& n, const std::string& what, size_t values) const {
    const auto flag = [&](const char* key) {
      if (j.contains(key) && !j[key].is_boolean()) bad(what, "'s ", key, " is not true or false");
      return j.value(key, false);
    };
    const auto index = [&](const char* key, int64_t below) {
      if (!j.contains(key)) return -1;
      const Json& v = j[key];
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= below)
        bad(what, "'s ", key, " ", v.dump(), " is not an index below ", below);
      return int(v.get<int64_t>());
    };
    constexpr int64_t kMany = int64_t(1) << 30;
    n.backward = flag("backward");
    n.param_grad = flag("param_grad");
    n.layer = index("layer", kMany);
    n.stage = index("stage", kMany);
    n.micro = index("micro", kMany);
    n.grad_of = index("grad_of", int64_t(values));
  }

  // A boxing node, or a fused reduction or gather over mesh `axes`: n inputs to n outputs.
  Node collective(const Json& j, Node& n, const std::string& name, const std::string& what,
                  size_t values) const {
    const std::string kind = string(j["kind"], what + "'s kind");
    if (kind != name) bad(what, " is a ", kind, " named '", name, "'");
    if (kind == "boxing")
      n.kind = NodeKind::kBoxing;
    else if (kind == "reduce")
      n.kind = NodeKind::kReduce;
    else if (kind == "gather")
      n.kind = NodeKind::kGather;
    else
      bad(what, " has kind '", kind, "' (op, boxing, reduce or gather)");
    n.inputs = ids(at(j, "inputs", what), what + "'s inputs", values);
    n.outputs = ids(at(j, "outputs", what), what + "'s outputs", values);
    if (n.inputs.size() != n.outputs.size() || n.inputs.empty() ||
        (n.kind == NodeKind::kBoxing && n.inputs.size() != 1))
      bad(what, " (", kind, ") takes ", n.inputs.size(), " inputs to ", n.outputs.size(),
          " outputs");
    if (n.kind != NodeKind::kBoxing) n.axes = ints(at(j, "axes", what), what + "'s axes");
    return n;
  }
};

}  // namespace

namespace {

// graph.json nests a few levels deep; a file nested far deeper is not one (and nlohmann's
// recursive copy and dump of such a value would exhaust the stack). Counted before parsing.
constexpr int kMaxJsonDepth = 64;

int json_depth(const std::string& text) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

// A node as its op defines it, before anything runs: a collective moves global values and keeps
// their shape and dtype; an op node's inputs satisfy its infer (arity, required inputs,
// attributes) and its outputs are exactly what the infer gives, so a file that lies about a
// shape or adds an output fails here instead of making a reader run past a buffer.
void check_node(const Reader& r, const Graph& g, const Node& node, size_t i) {
  const std::vector<Value>& values = g.values();
  const std::string what = str_cat("node ", i, " (", node.name(), ")");
  if (node.kind != NodeKind::kOp) {
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      if (node.inputs[k] < 0) r.bad(what, "'s input ", k, " is no value");
      const Value &in = values[size_t(node.inputs[k])], &out = values[size_t(node.outputs[k])];
      // Boxing may take a local value in (a tensor made inside build(), made global there).
      if (!out.is_global() || (!in.is_global() && node.kind != NodeKind::kBoxing))
        r.bad(what, " moves ", value_str(in), " to ", value_str(out),
              ": collectives make global values (of global ones, but for boxing)");
      if (in.shape != out.shape || in.dtype != out.dtype)
        r.bad(what, " turns ", value_str(in), " into ", value_str(out),
              ": a collective keeps the logical shape and dtype");
      for (int64_t a : node.axes)
        if (a < 0 || a >= int64_t(out.placement->ndim()))
          r.bad(what, " reduces over mesh axis ", a, " of ", out.placement->str());
    }
    return;
  }
  std::vector<TensorMeta> metas;
  for (int id : node.inputs) {
    if (id < 0) {
      metas.push_back(TensorMeta{.defined = false});
      continue;
    }
    const Value& v = values[size_t(id)];
    metas.push_back(TensorMeta{.shape = v.shape, .dtype = v.dtype, .device = v.device});
  }
  std::vector<TensorMeta> want;
  try {
    want = infer_metas(*node.op, metas, node.attrs);
  } catch (const Error& e) {
    r.bad(what, ": ", e.what());
  }
  if (want.size() != node.outputs.size())
    r.bad(what, " has ", node.outputs.size(), " outputs where ", node.name(), " makes ",
          want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    const Value& v = values[size_t(node.outputs[k])];
    if (v.shape != want[k].shape || v.dtype != want[k].dtype)
      r.bad(what, "'s output ", k, " is declared ", shape_str(v.shape), " ", dtype_name(v.dtype),
            " but ", node.name(), " of its inputs gives ", shape_str(want[k].shape), " ",
            dtype_name(want[k].dtype));
  }
}

Json parse(const Reader& r, const std::string& text) {
  if (json_depth(text) > kMaxJsonDepth)
    r.bad("nests deeper than ", kMaxJsonDepth, " levels (corrupt or not a graph)");
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) r.bad("not a JSON object (corrupt or not a graph)");
  const Json& version = r.at(j, "format_version", "the graph");
  if (!version.is_number_integer() || version.get<int>() != kGraphFormatVersion)
    r.bad("format version ", version.dump(), ", this build reads ", kGraphFormatVersion);
  const Json& batch = j.contains("batch") ? j["batch"] : Json(0);
  if (!batch.is_number_integer() || batch.get<int64_t>() < 0)
    r.bad("\"batch\" is not a batch size");
  return j;
}

}  // namespace

Graph from_json(const std::string& text, const std::map<std::string, Tensor>& variables,
                const std::string& where, const LoadOptions& options) {
  return from_json(
      text,
      [&](const std::string& name, const Value&) {
        auto it = variables.find(name);
        return it == variables.end() ? Tensor() : it->second;
      },
      where, options);
}

Graph from_json(const std::string& text, const VariableSource& variables, const std::string& where,
                const LoadOptions& options) {
  Reader r{where, options.batch, options.device ? &*options.device : nullptr};
  const Json j = parse(r, text);
  if (options.batch < 0) r.bad("batch ", options.batch, " is not a batch size");
  if (options.batch && !j.value("batch", int64_t(0)))
    r.bad(
        "was saved for one batch size only (graph.save(path, dynamic_batch=False)); it cannot "
        "run a batch of ",
        options.batch);
  const Json& values = r.at(j, "values", "the graph");
  if (!values.is_array()) r.bad("\"values\" is not a list");
  const size_t n = values.size();
  std::map<int64_t, std::string> variable_of;  // value id -> saved name
  const Json& vars = r.at(j, "variables", "the graph");
  if (!vars.is_array()) r.bad("\"variables\" is not a list");
  for (const Json& v : vars) {
    const Json& id = r.at(v, "value", "a variable");
    if (!id.is_number_integer()) r.bad("a variable's value is not an id");
    variable_of[id.get<int64_t>()] = r.string(r.at(v, "name", "a variable"), "a variable's name");
  }
  const std::vector<int> inputs = r.ids(r.at(j, "inputs", "the graph"), "\"inputs\"", n);
  Graph g;
  // Inputs and variables are added as they come (graph.h: ids in order), so the ids line up.
  for (size_t i = 0; i < n; ++i) {
    const Value v = r.value(values[i], i);
    int id;
    if (auto it = variable_of.find(int64_t(i)); it != variable_of.end()) {
      const std::string& name = it->second;
      if (values[i].contains("batch")) r.bad("variable ", name, " follows the batch");
      Shape want = v.shape;
      std::optional<std::vector<int64_t>> coords;
      if (v.is_global()) {
        if (!options.ctx)
          r.bad("variable ", name, " is global (", value_str(v),
                "): a graph saved over placements loads with a distributed world");
        coords = v.placement->coords_of(rank_of(*options.ctx->world));
        if (coords) want = local_shape(v.shape, v.nd_sbp, *v.placement, *coords);
      }
      Tensor t;
      if (!v.is_global() || coords) {
        t = variables(name, v);
        if (!t.defined()) r.bad("variable ", name, " is not in the weights");
        if (t.shape() != want || t.dtype() != v.dtype)
          r.bad("variable ", name, " is ", shape_str(t.shape()), " ", dtype_name(t.dtype()),
                " in the weights but ", shape_str(want), " ", dtype_name(v.dtype), " in the graph",
                v.is_global() ? " (this rank's shard)" : "");
        if (r.device) t = to_device(t, *r.device);
      } else {
        t = outside_shard(v.shape, v.dtype, v.device);
      }
      if (v.is_global()) t = as_tensor({t, v.shape, *v.placement, v.nd_sbp}, options.ctx);
      id = g.add_variable(t);
    } else if (std::find(inputs.begin(), inputs.end(), int(i)) != inputs.end()) {
      id = g.add_input(v);
    } else {
      id = g.add_value(v);
    }
    OFL_CHECK(id == int(i));
  }
  if (g.inputs() != inputs) r.bad("\"inputs\" are not in the order of their values");
  const Json& nodes = r.at(j, "nodes", "the graph");
  if (!nodes.is_array()) r.bad("\"nodes\" is not a list");
  // Each node reads only inputs, variables and what earlier nodes made, and makes each value
  // once: the executor can trust the order.
  std::vector<bool> made(n, false);
  for (int id : g.inputs()) made[size_t(id)] = true;
  for (const Variable& v : g.variables()) made[size_t(v.value)] = true;
  for (size_t i = 0; i < nodes.size(); ++i) {
    Node node = r.node(nodes[i], i, n);
    for (int id : node.inputs)
      if (id >= 0 && !made[size_t(id)])
        r.bad("node ", i, " (", node.name(), ") reads value ", id, " before any node makes it");
    for (int id : node.outputs) {
      if (id < 0 || made[size_t(id)])
        r.bad("node ", i, " (", node.name(), ") makes value ", id, ", which is ",
              id < 0 ? "no value" : "made already");
      made[size_t(id)] = true;
    }
    check_node(r, g, node, i);
    g.add_node(std::move(node));
  }
  std::vector<int> outputs = r.ids(r.at(j, "outputs", "the graph"), "\"outputs\"", n);
  for (int id : outputs)
    if (id < 0 || !made[size_t(id)]) r.bad("output value ", id, " is made by no node");
  g.set_outputs(std::move(outputs));
  return g;
}

Signature signature_from_json(const std::string& text, const std::string& where) {
  const Reader r{where};
  const Json j = parse(r, text);
  const Json& values = r.at(j, "values", "the graph");
  if (!values.is_array()) r.bad("\"values\" is not a list");
  Signature sig;
  sig.batch = j.value("batch", int64_t(0));
  sig.single_output = j.value("single_output", false);
  auto infos = [&](const char* key, const char* names_key, const char* prefix) {
    std::vector<ValueInfo> out;
    const std::vector<int> ids = r.ids(r.at(j, key, "the graph"), key, values.size());
    const Json names = j.value(names_key, Json::array());
    if (!names.is_array() || (!names.empty() && names.size() != ids.size()))
      r.bad("\"", names_key, "\" does not name each of the ", ids.size(), " ", key);
    for (size_t i = 0; i < ids.size(); ++i) {
      const std::string what = std::string(key, std::strlen(key) - 1) + " " + std::to_string(i);
      if (ids[i] < 0) r.bad(what, " is no value");
      Value v = r.value(values[size_t(ids[i])], size_t(ids[i]));
      for (auto [d, k] : r.batch_marks(values[size_t(ids[i])], v.shape.size(), what))
        v.shape[d] = -1;
      out.push_back(
          {names.empty() ? prefix + std::to_string(i) : r.string(names[i], what + "'s name"),
           v.shape, v.dtype, v.device});
    }
    return out;
  };
  sig.inputs = infos("inputs", "input_names", "input");
  sig.outputs = infos("outputs", "output_names", "output");
  return sig;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  if (!f) fail("load", "cannot open ", path, " (not a folder graph.save wrote?)");
  std::stringstream text;
  text << f.rdbuf();
  return text.str();
}

int rank_of(const comm::Communicator& world) {
  return world.ranks()[size_t(world.rank())];
}

Graph load(const std::string& dir, const LoadOptions& options) {
  const std::string path = dir + "/graph.json";
  const std::string text = read_text(path);  // first: a folder without it is not a graph
  if (!std::ifstream(dir + "/weights/index.json"))
    return from_json(text, safetensors::read(dir + "/weights.safetensors"), path, options);
  // A graph over placements: each variable read as this rank's shard of it.
  checkpoint::Reader weights(dir + "/weights");
  return from_json(
      text,
      [&](const std::string& name, const Value& v) {
        if (!v.is_global()) return weights.read(name, v.shape, v.dtype);
        auto coords = v.placement->coords_of(rank_of(*options.ctx->world));
        return weights.read(name, v.shape, v.dtype, v.placement, v.nd_sbp, *coords);
      },
      path, options);
}

}  // namespace ofl::internal::graph
