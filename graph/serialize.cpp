#include "graph/serialize.h"

#include <cstdio>
#include <sstream>

namespace ofl::graph {

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
    if (n.kind == NodeKind::kReduce || n.kind == NodeKind::kGather)
      os << ", \"axes\": " << ints(n.axes);
    os << "}";
  }
  os << "\n  ],\n  \"outputs\": " << ids(g.outputs()) << "\n}\n";
  return os.str();
}

}  // namespace ofl::graph
