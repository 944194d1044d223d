// Every op's public signatures bound generically (DESIGN.md, "The row is the only source"): the
// flow.<name> functions and Tensor methods come from the registry's schemas, with arguments
// parsed by the schema, overloads resolved in registration order as PyTorch does, and help text
// printing the signatures. Nothing here names an op.
#include <map>
#include <memory>

#include "convert.h"
#include "core/dispatcher.h"
#include "core/op_def.h"
#include "core/random.h"
#include "sbp/placement.h"

namespace ofl::internal::py_bind {

namespace {

struct Overload {
  const OpDef* def;
  const Api* api;
};
using Overloads = std::vector<Overload>;

const char* py_type_name(py::handle obj) {
  return Py_TYPE(obj.ptr())->tp_name;
}

// A Python int or another integer with __index__ (a numpy integer); not a bool (as PyTorch:
// torch.std(x, True) is the unbiased flag, not dim 1), a tensor or a dtype (pybind's enums
// have __index__ too).
bool is_int(py::handle obj) {
  if (PyBool_Check(obj.ptr())) return false;
  return PyLong_Check(obj.ptr()) || (PyIndex_Check(obj.ptr()) && !PyFloat_Check(obj.ptr()) &&
                                     !py::isinstance<Tensor>(obj) && !py::isinstance<DType>(obj));
}

std::optional<int64_t> to_int(py::handle obj) {
  if (!is_int(obj)) return std::nullopt;
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(obj.ptr()));
  if (!index) {
    PyErr_Clear();
    return std::nullopt;
  }
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow) return std::nullopt;
  return static_cast<int64_t>(v);
}

std::optional<std::vector<int64_t>> to_ints(py::handle obj) {
  if (is_int(obj)) {
    auto v = to_int(obj);
    if (!v) return std::nullopt;
    return std::vector<int64_t>{*v};
  }
  if (!PyTuple_Check(obj.ptr()) && !PyList_Check(obj.ptr())) return std::nullopt;
  std::vector<int64_t> out;
  for (py::handle item : obj) {
    auto v = to_int(item);
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

// A Python number (float, int, or another type with __float__) as a double; not a string or
// a tuple.
std::optional<double> to_double(py::handle obj) {
  PyObject* o = obj.ptr();
  if (!PyFloat_Check(o) && !PyLong_Check(o) &&
      (!PyNumber_Check(o) || PyUnicode_Check(o) || PyTuple_Check(o)))
    return std::nullopt;
  double v = PyFloat_AsDouble(o);
  if (v == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    return std::nullopt;
  }
  return v;
}

// `obj` as p's type; nullopt when it does not fit.
std::optional<ArgValue> convert(py::handle obj, const Param& p, const char* op) {
  if (obj.is_none()) {
    if (p.optional) return ArgValue{};
    return std::nullopt;
  }
  PyObject* o = obj.ptr();
  switch (p.type) {
    case ParamType::kTensor:
      if (py::isinstance<Tensor>(obj)) return obj.cast<Tensor>();
      return std::nullopt;
    case ParamType::kOperand:
      if (py::isinstance<Tensor>(obj)) return obj.cast<Tensor>();
      if (py::isinstance<DType>(obj) || PyUnicode_Check(o)) return std::nullopt;
      if (PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o) || PyTuple_Check(o) ||
          PyList_Check(o) || py::isinstance<py::array>(obj) ||
          PyObject_HasAttrString(o, "__array_interface__") || PyNumber_Check(o))
        return as_tensor(obj, op);
      return std::nullopt;
    case ParamType::kTensors: {
      if (!PyTuple_Check(o) && !PyList_Check(o)) return std::nullopt;
      std::vector<Tensor> ts;
      for (py::handle item : obj) {
        if (!py::isinstance<Tensor>(item)) return std::nullopt;
        ts.push_back(item.cast<Tensor>());
      }
      return ts;
    }
    case ParamType::kBool:
      if (PyBool_Check(o)) return o == Py_True;
      if (is_int(obj) || std::string_view(py_type_name(obj)).starts_with("numpy.bool"))
        return PyObject_IsTrue(o) == 1;
      return std::nullopt;
    case ParamType::kInt:
      if (auto v = to_int(obj)) return *v;
      return std::nullopt;
    case ParamType::kFloat:
      if (auto v = to_double(obj)) return *v;
      return std::nullopt;
    case ParamType::kStr:
      if (PyUnicode_Check(o)) return obj.cast<std::string>();
      return std::nullopt;
    case ParamType::kDType:
      if (py::isinstance<DType>(obj)) return obj.cast<DType>();
      return std::nullopt;
    case ParamType::kInts:
      if (auto v = to_ints(obj)) return std::move(*v);
      return std::nullopt;
    case ParamType::kGenerator:
      if (py::isinstance<Generator>(obj)) return obj.cast<Generator*>();
      return std::nullopt;
    case ParamType::kDevice:
      if (py::isinstance<Device>(obj)) return obj.cast<Device>();
      if (PyUnicode_Check(o)) return Device::parse(obj.cast<std::string>());
      return std::nullopt;
    case ParamType::kNumber:
      if (PyBool_Check(o)) return o == Py_True;
      if (auto v = to_int(obj)) return *v;
      if (py::isinstance<Tensor>(obj)) {  // a one-element tensor as its number
        if (obj.cast<const Tensor&>().numel() != 1) return std::nullopt;
        return convert(obj.attr("item")(), p, op);
      }
      if (auto v = to_double(obj)) return *v;
      return std::nullopt;
    case ParamType::kPlacement:  // read by the front end (create below), not by the call
      if (py::isinstance<Placement>(obj)) return ArgValue{};
      return std::nullopt;
    case ParamType::kSbp: {
      if (py::isinstance<Sbp>(obj) || py::isinstance<NdSbp>(obj)) return ArgValue{};
      if (!PyTuple_Check(o) && !PyList_Check(o)) return std::nullopt;
      for (py::handle item : obj)
        if (!py::isinstance<Sbp>(item)) return std::nullopt;
      return ArgValue{};
    }
  }
  return std::nullopt;
}

std::string mismatch(const Param& p, py::handle obj) {
  if (p.type == ParamType::kInts)
    return str_cat("argument '", p.name, "' must be an int or a sequence of ints (sizes must be ",
                   "ints), not ", py_type_name(obj));
  return str_cat("argument '", p.name, "' must be ", param_type_name(p.type),
                 p.optional ? " or None" : "", ", not ", py_type_name(obj));
}

// The positional arguments from `a` on as one list argument of p's type.
bool gather_varargs(const Param& p, const py::args& args, size_t a, ArgValue& out,
                    std::string& why) {
  std::vector<int64_t> ints;
  std::vector<Tensor> tensors;
  for (; a < args.size(); ++a) {
    if (p.type == ParamType::kTensors && py::isinstance<Tensor>(args[a])) {
      tensors.push_back(args[a].cast<Tensor>());
      continue;
    }
    auto v = p.type == ParamType::kInts && is_int(args[a]) ? to_int(args[a]) : std::nullopt;
    if (!v) {
      why = mismatch(p, args[a]);
      return false;
    }
    ints.push_back(*v);
  }
  if (p.type == ParamType::kTensors)
    out = std::move(tensors);
  else
    out = std::move(ints);
  return true;
}

// The arguments of a call by s's parameters, or false with why they do not fit. A creation
// signature's size given as no positional arguments is the empty shape (zeros(*x.shape) of a
// 0-d x).
bool parse(const Schema& s, bool method, bool creation, const py::args& args,
           const py::kwargs& kwargs, const char* op, std::vector<ArgValue>& out, std::string& why) {
  const size_t n = s.params.size();
  out.assign(n, ArgValue{});
  std::vector<char> given(n, 0);
  const size_t npos = args.size();
  const int varargs = s.varargs_param(method);
  size_t a = 0;
  for (size_t i = 0; i < n && a < npos; ++i) {
    const Param& p = s.params[i];
    if (p.keyword_only) break;
    const bool spread =
        npos - a > 1 || (p.type == ParamType::kTensors && py::isinstance<Tensor>(args[a]));
    if (static_cast<int>(i) == varargs && spread) {  // f(2, 3) as f((2, 3))
      if (!gather_varargs(p, args, a, out[i], why)) return false;
      a = npos;
      given[i] = 1;
      break;
    }
    auto v = convert(args[a], p, op);
    if (!v) {
      why = mismatch(p, args[a]);
      return false;
    }
    out[i] = std::move(*v);
    given[i] = 1;
    ++a;
  }
  if (a < npos) {
    why = str_cat("takes at most ", a, " positional arguments, ", npos, " given");
    return false;
  }
  for (auto [key, value] : kwargs) {
    const std::string name = py::str(key);
    size_t i = 0;
    while (i < n && s.params[i].name != name) ++i;
    if (i == n || (method && i == 0)) {
      why = str_cat("got an unexpected keyword argument '", name, "'");
      return false;
    }
    if (given[i]) {
      why = str_cat("got multiple values for argument '", name, "'");
      return false;
    }
    auto v = convert(value, s.params[i], op);
    if (!v) {
      why = mismatch(s.params[i], value);
      return false;
    }
    out[i] = std::move(*v);
    given[i] = 1;
  }
  for (size_t i = 0; i < n; ++i) {
    if (given[i]) continue;
    if (creation && static_cast<int>(i) == varargs && s.params[i].type == ParamType::kInts) {
      out[i] = std::vector<int64_t>{};
      continue;
    }
    if (!s.params[i].has_default) {
      why = str_cat("missing argument '", s.params[i].name, "'");
      return false;
    }
    out[i] = s.params[i].default_value;
  }
  return true;
}

// A named tuple type per signature; leaked on purpose to outlive interpreter teardown.
py::object named_tuple(const Schema& s) {
  static std::map<std::string, py::object*> types;
  py::object*& type = types[s.name];
  if (!type) {
    py::list fields;
    for (const std::string& f : s.returns) fields.append(f);
    type = new py::object(py::module_::import("collections").attr("namedtuple")(s.name, fields));
  }
  return *type;
}

// A result that is one of the arguments (an in-place op's self) returns that very object, so
// that identity and subclasses (nn.Parameter) survive.
py::object to_python(CallResult r, const Schema& s, const py::args& args) {
  if (Tensor* t = std::get_if<Tensor>(&r)) {
    for (py::handle a : args)
      if (py::isinstance<Tensor>(a) && a.cast<const Tensor&>().impl() == t->impl())
        return py::reinterpret_borrow<py::object>(a);
    return py::cast(std::move(*t));
  }
  std::vector<Tensor>& ts = std::get<std::vector<Tensor>>(r);
  if (s.returns.empty()) return py::cast(std::move(ts));
  py::tuple items(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) items[i] = py::cast(std::move(ts[i]));
  return named_tuple(s)(*items);
}

// A creation signature (ApiBind kCreation): the row's call builds the whole tensor on the device
// it is given, and the front end's one policy (oneflowlike/_creation.py: _place, and
// _place_like for the *_like functions) picks that device and lays the tensor out: the default
// device, placement= and sbp=, the global mode, a global input's layout, requires_grad.
// Placement and SBP arguments are given by keyword.
py::object create(const Overload& o, std::vector<ArgValue> values, bool method,
                  const py::args& args, const py::kwargs& kwargs) {
  const Schema& s = o.api->parsed;
  auto index = [&s](std::string_view name) {
    for (size_t i = 0; i < s.params.size(); ++i)
      if (s.params[i].name == name) return static_cast<int>(i);
    return -1;
  };
  const int device = index("device"), grad = index("requires_grad");
  OFL_CHECK(device >= 0 && grad >= 0, "creation signature ", s.text,
            " needs device and requires_grad");
  auto kwarg = [&kwargs](const char* name) {
    return kwargs.contains(name) ? py::reinterpret_borrow<py::object>(kwargs[name]) : py::none();
  };
  py::object where = kwarg("device");
  bool random = false;
  for (const Param& p : s.params) random |= p.type == ParamType::kGenerator;
  const bool requires_grad = std::get<bool>(values[grad]);
  // zeros_like(input, ...) and input.new_zeros(...): the input tensor as given.
  py::object input = s.params[0].type != ParamType::kTensor ? py::object(py::none())
                     : args.size()                          ? py::object(args[0])
                                                            : kwarg("input");
  auto shared = std::make_shared<std::vector<ArgValue>>(std::move(values));
  py::cpp_function build([o, shared, device](py::object on) {
    std::vector<ArgValue> v = *shared;
    v[device] = on.is_none() ? ArgValue{} : ArgValue{on.cast<Device>()};
    return std::get<Tensor>(call_api(*o.def, *o.api, CallArgs(std::move(v))));
  });
  // Leaked on purpose, as the named tuple types are.
  static const auto& policy = *new py::object(py::module_::import("oneflowlike._creation"));
  if (!input.is_none() && !method)
    return policy.attr("_place_like")(s.name, build, input, where, requires_grad, random);
  if (method && where.is_none()) where = input.attr("device");  // on input's device
  return policy.attr("_place")(s.name, build, where, kwarg("placement"), kwarg("sbp"),
                                   requires_grad, random);
}

py::object call(const std::string& name, const Overloads& overloads, bool method,
                const py::args& args, const py::kwargs& kwargs) {
  std::vector<ArgValue> values;
  std::string why;
  std::string whys;
  for (const Overload& o : overloads) {
    const bool creation = o.api->bind & kCreation;
    if (!parse(o.api->parsed, method, creation, args, kwargs, name.c_str(), values, why)) {
      whys += str_cat(whys.empty() ? " " : "; ", o.api->parsed.text, ": ", why);
      continue;
    }
    if (creation) return create(o, std::move(values), method, args, kwargs);
    return to_python(call_api(*o.def, *o.api, CallArgs(std::move(values))), o.api->parsed, args);
  }
  if (overloads.size() == 1)
    throw TypeError(str_cat("[", name, "] ", why, "; expects ", overloads[0].api->parsed.text));
  throw TypeError(str_cat("[", name, "] no signature fits the arguments:", whys));
}

std::string help_text(const Overloads& overloads) {
  std::string text;
  const char* doc = nullptr;
  for (const Overload& o : overloads) {
    text += o.api->parsed.text + "\n";
    if (!doc) doc = o.def->doc;
  }
  if (doc) text += str_cat("\n", doc, "\n");
  return text;
}

}  // namespace

void bind_ops(py::module_& m, py::handle tensor_cls) {
  py::options options;
  options.disable_function_signatures();  // the help text prints the schemas instead
  // By name, in registration order (overloads are tried in that order).
  std::map<std::string, Overloads> functions, methods;
  for (const OpDef& def : registered_ops())
    for (const Api& api : def.api) {
      if (api.bind & (kFunction | kInternal)) functions[api.parsed.name].push_back({&def, &api});
      if (api.bind & kMethod) methods[api.parsed.name].push_back({&def, &api});
    }
  for (auto& [name, overloads] : functions) {
    auto shared = std::make_shared<const Overloads>(std::move(overloads));
    m.attr(name.c_str()) = py::cpp_function(
        [name, shared](const py::args& args, const py::kwargs& kwargs) {
          return call(name, *shared, false, args, kwargs);
        },
        py::name(name.c_str()), py::doc(help_text(*shared).c_str()));
  }
  for (auto& [name, overloads] : methods) {
    auto shared = std::make_shared<const Overloads>(std::move(overloads));
    tensor_cls.attr(name.c_str()) = py::cpp_function(
        [name, shared](const py::args& args, const py::kwargs& kwargs) {
          return call(name, *shared, true, args, kwargs);
        },
        py::name(name.c_str()), py::is_method(tensor_cls), py::doc(help_text(*shared).c_str()));
  }
  // The schemas, for the API reference and tests that walk the registry.
  m.def("op_signatures", [] {
    py::list out;
    for (const OpDef& def : registered_ops())
      for (const Api& api : def.api)
        out.append(py::dict(py::arg("op") = def.name, py::arg("schema") = api.parsed.text,
                            py::arg("function") = bool(api.bind & kFunction),
                            py::arg("method") = bool(api.bind & kMethod),
                            py::arg("creation") = bool(api.bind & kCreation),
                            py::arg("doc") = def.doc ? py::object(py::str(def.doc)) : py::none()));
    return out;
  });
}

}  // namespace ofl::internal::py_bind
