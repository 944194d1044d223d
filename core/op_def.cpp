#include "core/op_def.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <sstream>
#include <unordered_map>

#include "core/error.h"

namespace ofl::internal {

namespace {
// A deque: front ends keep references to their definitions while later ones register.
std::deque<OpDef>& table() {
  static std::deque<OpDef> ops;
  return ops;
}
// The definitions by name (keys view the names held in the table).
std::unordered_map<std::string_view, const OpDef*>& by_name() {
  static std::unordered_map<std::string_view, const OpDef*> index;
  return index;
}

std::ostream& operator<<(std::ostream& os, const AttrValue& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>)
          os << (x ? "true" : "false");
        else if constexpr (std::is_same_v<T, DType>)
          os << dtype_name(x);
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>)
          os << shape_str(x);
        else
          os << x;
      },
      v);
  return os;
}
}  // namespace

const char* attr_type_name(AttrType t) {
  static const char* names[] = {"bool", "int", "float", "string", "dtype", "ints"};
  return names[static_cast<int>(t)];
}

const AttrValue* Attrs::find(std::string_view name) const {
  // Names are literals, often the very same one: compared by address first, then without
  // measuring them.
  for (const auto& [k, v] : items_)
    if ((k == name.data() || std::strncmp(k, name.data(), name.size()) == 0) &&
        k[name.size()] == '\0')
      return &v;
  return nullptr;
}

const AttrValue& Attrs::value(std::string_view name) const {
  const AttrValue* v = find(name);
  OFL_CHECK(v, "no attribute ", name, " among ", str());
  return *v;
}

void Attrs::set(const char* name, AttrValue v) {
  for (auto& [k, old] : items_)
    if (std::string_view(k) == name) {
      old = std::move(v);
      return;
    }
  items_.emplace_back(name, std::move(v));
}

std::string Attrs::str() const {
  std::ostringstream os;
  for (size_t i = 0; i < items_.size(); ++i)
    os << (i ? ", " : "") << items_[i].first << "=" << items_[i].second;
  return os.str();
}

std::string TensorMeta::str() const {
  if (!defined) return "none";
  return shape_str(shape) + " " + dtype_name(dtype);
}

bool register_ops(std::vector<OpDef> defs) {
  for (auto& def : defs) {
    OFL_CHECK(!find_op(def.name), "op registered twice: ", def.name);
    for (Api& api : def.api) {
      api.parsed = parse_schema(api.schema);
      if (api.call.mismatch) {
        const std::string why = api.call.mismatch(api.parsed);
        OFL_CHECK(why.empty(), "the front function of '", api.schema, "' does not fit it: ", why);
      }
    }
    const OpDef& kept = table().emplace_back(std::move(def));
    by_name().emplace(kept.name, &kept);
  }
  return true;
}

const std::deque<OpDef>& registered_ops() {
  return table();
}

const OpDef* find_op(std::string_view name) {
  auto it = by_name().find(name);
  return it == by_name().end() ? nullptr : it->second;
}

const OpDef& op_def(std::string_view name) {
  const OpDef* def = find_op(name);
  OFL_CHECK(def, "no registered op named ", name);
  return *def;
}

}  // namespace ofl::internal
