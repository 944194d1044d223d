#include "core/op_schema.h"

#include <cctype>
#include <charconv>

#include "core/error.h"

namespace ofl::internal {

namespace {

struct TypeSpelling {
  std::string_view text;
  ParamType type;
};
constexpr TypeSpelling kTypes[] = {
    {"Tensor|Number", ParamType::kOperand},
    {"Tensor[]", ParamType::kTensors},
    {"Tensor", ParamType::kTensor},
    {"bool", ParamType::kBool},
    {"int[]", ParamType::kInts},
    {"int", ParamType::kInt},
    {"float", ParamType::kFloat},
    {"str", ParamType::kStr},
    {"dtype", ParamType::kDType},
    {"Generator", ParamType::kGenerator},
    {"Device", ParamType::kDevice},
    {"Number", ParamType::kNumber},
    {"Placement", ParamType::kPlacement},
    {"SBP", ParamType::kSbp},
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits on commas outside brackets and quotes.
std::vector<std::string_view> split_top(std::string_view s) {
  std::vector<std::string_view> parts;
  int depth = 0;
  char quote = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (quote) {
      if (s[i] == quote) quote = 0;
      continue;
    }
    if (s[i] == '\'' || s[i] == '"') quote = s[i];
    if (s[i] == '(' || s[i] == '[') ++depth;
    if (s[i] == ')' || s[i] == ']') --depth;
    if (s[i] == ',' && depth == 0) {
      parts.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  std::string_view last = trim(s.substr(start));
  if (!last.empty()) parts.push_back(last);
  return parts;
}

int64_t parse_int(std::string_view s, std::string_view schema) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  OFL_CHECK(ec == std::errc() && end == s.data() + s.size(), "schema ", schema, ": bad int ", s);
  return v;
}

ArgValue parse_default(std::string_view s, ParamType type, std::string_view schema) {
  if (s == "None") return std::monostate{};
  switch (type) {
    case ParamType::kBool:
      OFL_CHECK(s == "True" || s == "False", "schema ", schema, ": bad bool ", s);
      return s == "True";
    case ParamType::kInt:
      return parse_int(s, schema);
    case ParamType::kInts:
      return std::vector<int64_t>{parse_int(s, schema)};
    case ParamType::kFloat:
      return std::stod(std::string(s));
    case ParamType::kNumber:
      if (s == "True" || s == "False") return s == "True";
      if (s.find_first_of(".eE") == std::string_view::npos) return parse_int(s, schema);
      return std::stod(std::string(s));
    case ParamType::kStr:
      OFL_CHECK(s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front(),
                "schema ", schema, ": bad string ", s);
      return std::string(s.substr(1, s.size() - 2));
    case ParamType::kDType:
      return dtype_from_name(std::string(s));
    default:
      OFL_CHECK(false, "schema ", schema, ": a ", param_type_name(type), " defaults only to None");
  }
  return std::monostate{};
}

Param parse_param(std::string_view text, bool keyword_only, std::string_view schema) {
  Param p;
  p.keyword_only = keyword_only;
  std::string_view def;
  if (size_t eq = text.find('='); eq != std::string_view::npos) {
    def = trim(text.substr(eq + 1));
    text = trim(text.substr(0, eq));
  }
  size_t space = text.rfind(' ');
  OFL_CHECK(space != std::string_view::npos, "schema ", schema, ": parameter ", text,
            " has no type");
  std::string_view type = trim(text.substr(0, space));
  p.name = std::string(trim(text.substr(space + 1)));
  if (!type.empty() && type.back() == '?') {
    p.optional = true;
    type.remove_suffix(1);
  }
  bool known = false;
  for (const TypeSpelling& t : kTypes)
    if (t.text == type) {
      p.type = t.type;
      known = true;
    }
  OFL_CHECK(known, "schema ", schema, ": unknown type ", type);
  if (!def.empty()) {
    p.has_default = true;
    p.default_value = parse_default(def, p.type, schema);
    OFL_CHECK(p.optional || !std::holds_alternative<std::monostate>(p.default_value), "schema ",
              schema, ": ", p.name, " defaults to None but is not optional");
  }
  return p;
}

}  // namespace

const char* param_type_name(ParamType t) {
  for (const TypeSpelling& s : kTypes)
    if (s.type == t) return s.text.data();
  return "?";
}

int Schema::varargs_param(bool method) const {
  const size_t first = method ? 1 : 0;
  size_t end = first;  // one past the last positional parameter
  while (end < params.size() && !params[end].keyword_only) ++end;
  if (end == first + 1 && params[first].type == ParamType::kInts) return static_cast<int>(first);
  if (end > first && params[end - 1].type == ParamType::kTensors) return static_cast<int>(end - 1);
  return -1;
}

Schema parse_schema(std::string_view text) {
  Schema s;
  s.text = std::string(text);
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  size_t arrow = text.find("->");
  if (arrow != std::string_view::npos) close = text.rfind(')', arrow);
  OFL_CHECK(open != std::string_view::npos && close != std::string_view::npos && close > open,
            "schema ", text, ": expected name(params)");
  s.name = std::string(trim(text.substr(0, open)));
  bool keyword_only = false;
  for (std::string_view p : split_top(text.substr(open + 1, close - open - 1))) {
    if (p == "*") {
      keyword_only = true;
      continue;
    }
    s.params.push_back(parse_param(p, keyword_only, text));
  }
  if (arrow != std::string_view::npos) {
    std::string_view ret = trim(text.substr(arrow + 2));
    if (ret == "Tensor[]") {
      s.returns_list = true;
    } else if (!ret.empty() && ret.front() == '(') {
      OFL_CHECK(ret.back() == ')', "schema ", text, ": bad return ", ret);
      for (std::string_view r : split_top(ret.substr(1, ret.size() - 2))) {
        size_t space = r.rfind(' ');
        OFL_CHECK(space != std::string_view::npos, "schema ", text, ": unnamed output ", r);
        s.returns.emplace_back(trim(r.substr(space + 1)));
      }
    } else {
      OFL_CHECK(ret == "Tensor", "schema ", text, ": bad return ", ret);
    }
  }
  return s;
}

template <class T>
const T& CallArgs::get(size_t i) const {
  const T* v = std::get_if<T>(&values_[i]);
  OFL_CHECK(v, "argument ", i, " has another type");
  return *v;
}
template const Tensor& CallArgs::get<Tensor>(size_t) const;
template const std::vector<Tensor>& CallArgs::get<std::vector<Tensor>>(size_t) const;
template const bool& CallArgs::get<bool>(size_t) const;
template const int64_t& CallArgs::get<int64_t>(size_t) const;
template const double& CallArgs::get<double>(size_t) const;
template const std::string& CallArgs::get<std::string>(size_t) const;
template const DType& CallArgs::get<DType>(size_t) const;
template const std::vector<int64_t>& CallArgs::get<std::vector<int64_t>>(size_t) const;
template Generator* const& CallArgs::get<Generator*>(size_t) const;
template const Device& CallArgs::get<Device>(size_t) const;

double CallArgs::scalar(size_t i) const {
  if (const bool* b = std::get_if<bool>(&values_[i])) return *b ? 1.0 : 0.0;
  if (const int64_t* v = std::get_if<int64_t>(&values_[i])) return static_cast<double>(*v);
  return number(i);
}

std::optional<int64_t> CallArgs::optional_integer(size_t i) const {
  if (is_none(i)) return std::nullopt;
  return integer(i);
}

std::optional<double> CallArgs::optional_number(size_t i) const {
  if (is_none(i)) return std::nullopt;
  return number(i);
}

std::optional<DType> CallArgs::optional_dtype(size_t i) const {
  if (is_none(i)) return std::nullopt;
  return dtype(i);
}

std::vector<int64_t> CallArgs::optional_ints(size_t i) const {
  if (is_none(i)) return {};
  return ints(i);
}

}  // namespace ofl::internal
