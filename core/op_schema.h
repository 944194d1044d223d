// An op's public signatures (DESIGN.md, "The row is the only source"): written in its row in
// PyTorch's schema spelling, parsed once at registration, and the arguments of one call by
// position. The Python bindings bind every signature generically (python/src/op_binding.cpp);
// help text and the API reference print them.
//
//   "cumsum(Tensor input, int dim, *, dtype? dtype=None) -> Tensor"
//   "topk(Tensor input, int k, int dim=-1, bool largest=True, bool sorted=True)
//        -> (Tensor values, Tensor indices)"
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/tensor.h"

namespace ofl::internal {

class Generator;

enum class ParamType : uint8_t {
  kTensor,     // Tensor
  kOperand,    // Tensor|Number: a tensor, or a number (array-like data) as a 0-d wrapped tensor
  kTensors,    // Tensor[]
  kBool,       // bool
  kInt,        // int
  kFloat,      // float
  kStr,        // str
  kDType,      // dtype
  kInts,       // int[]: an int or a sequence of ints (a shape, axes); f(2, 3) as f((2, 3)) where
               // it is the only positional parameter
  kGenerator,  // Generator
  kDevice,     // Device: a device or its name
  kNumber,     // Number: a bool, int or float, kept as given (full's value picks the dtype)
  kPlacement,  // Placement and SBP (one sbp, or one per mesh axis): where a creation signature
  kSbp,        // lays its tensor out. The front end reads them; the row's call sees None.
};
const char* param_type_name(ParamType t);

// One argument's value; std::monostate is None.
using ArgValue = std::variant<std::monostate, Tensor, std::vector<Tensor>, bool, int64_t, double,
                              std::string, DType, std::vector<int64_t>, Generator*, Device>;

struct Param {
  std::string name;
  ParamType type = ParamType::kTensor;
  bool optional = false;      // "T?": None is allowed
  bool keyword_only = false;  // after "*"
  bool has_default = false;
  ArgValue default_value;
};

struct Schema {
  std::string name;                  // the function's or method's name
  std::vector<Param> params;         // a method's self is params[0]
  std::vector<std::string> returns;  // "-> (Tensor values, Tensor indices)": a named tuple
  bool returns_list = false;         // "-> Tensor[]"
  std::string text;                  // as written
  // The parameter taking f(2, 3) as f((2, 3)): an int[] that is the only positional one
  // besides self (`view`, `permute`), or a Tensor[] that is the last positional one
  // (`einsum(equation, a, b)`); -1 if none.
  int varargs_param(bool method) const;
};

// Parses a row's schema; malformed text (a bug in the row) is an internal error naming it.
Schema parse_schema(std::string_view text);

// The arguments of one call by the signature's parameter order, defaults filled in.
class CallArgs {
 public:
  explicit CallArgs(std::vector<ArgValue> values) : values_(std::move(values)) {}
  size_t size() const { return values_.size(); }
  const ArgValue& operator[](size_t i) const { return values_[i]; }
  bool is_none(size_t i) const { return std::holds_alternative<std::monostate>(values_[i]); }

  const Tensor& tensor(size_t i) const { return get<Tensor>(i); }
  Tensor optional_tensor(size_t i) const { return is_none(i) ? Tensor() : tensor(i); }
  const std::vector<Tensor>& tensors(size_t i) const { return get<std::vector<Tensor>>(i); }
  bool flag(size_t i) const { return get<bool>(i); }
  int64_t integer(size_t i) const { return get<int64_t>(i); }
  std::optional<int64_t> optional_integer(size_t i) const;
  double number(size_t i) const { return get<double>(i); }
  std::optional<double> optional_number(size_t i) const;
  const std::string& str(size_t i) const { return get<std::string>(i); }
  DType dtype(size_t i) const { return get<DType>(i); }
  std::optional<DType> optional_dtype(size_t i) const;
  const std::vector<int64_t>& ints(size_t i) const { return get<std::vector<int64_t>>(i); }
  // None as the empty list (axes: all of them).
  std::vector<int64_t> optional_ints(size_t i) const;
  Generator* generator(size_t i) const { return is_none(i) ? nullptr : get<Generator*>(i); }
  Device device(size_t i) const { return is_none(i) ? Device{} : get<Device>(i); }
  // A Number as a double, and whether it was given as an int or a bool.
  double scalar(size_t i) const;
  bool integral(size_t i) const { return !std::holds_alternative<double>(values_[i]); }

 private:
  template <class T>
  const T& get(size_t i) const;
  std::vector<ArgValue> values_;
};

// What a call returns: one tensor, or several (a list, or the named tuple the schema names).
using CallResult = std::variant<Tensor, std::vector<Tensor>>;

// The call a signature makes with its parsed arguments: any callable, or `call_front<f>`, which
// reads them by position as the C++ front function f takes them, and says at registration
// whether f's parameters fit the schema's one to one.
struct ApiCall {
  std::function<CallResult(const CallArgs&)> fn;
  // For a call derived from a front function: why its parameters do not fit `schema` ("" when
  // they do).
  std::string (*mismatch)(const Schema& schema) = nullptr;

  ApiCall() = default;
  ApiCall(std::nullptr_t) {}
  template <class F>
  requires std::is_invocable_r_v<CallResult, F, const CallArgs&> ApiCall(F f) : fn(std::move(f)) {}
  explicit operator bool() const { return static_cast<bool>(fn); }
  CallResult operator()(const CallArgs& a) const { return fn(a); }
};

// Where Python binds a signature: flow.<name>(input, ...), input.<name>(...), or both; or, for
// the package's own use (an optimizer's fused update), only on the extension module.
// kCreation (with kFunction or kMethod) marks a creation signature: its call builds the whole
// tensor on its `device` argument, and the front end decides which device that is and where the
// tensor goes (the default device, `placement` and `sbp`, the global mode, a leaf that requires
// grad), by one policy for every creation op. A signature with a Generator draws at random.
enum ApiBind : uint8_t {
  kFunction = 1,
  kMethod = 2,
  kFunctionAndMethod = 3,
  kInternal = 4,
  kCreation = 8,
};

// One public signature of an op and the call it makes with the parsed arguments. Without a
// call, the op itself runs: tensor arguments are its inputs in order, the others its attributes
// by name. Several ops may share a name (max(input), max(input, dim), max(input, other)): the
// first signature the arguments fit is called, as PyTorch resolves overloads.
struct Api {
  std::string schema;
  ApiCall call;
  uint8_t bind = kFunctionAndMethod;
  Schema parsed;  // filled at registration
};

namespace front_detail {

// How a front function's parameter of type T reads argument i, and which schema types it takes.
template <class T>
struct Arg;
#define OFL_FRONT_ARG(T, read, ...)                                              \
  template <>                                                                    \
  struct Arg<T> {                                                                \
    static decltype(auto) get(const CallArgs& a, size_t i) { return a.read(i); } \
    static bool fits(const Param& p) {                                           \
      const ParamType t = p.type;                                                \
      return __VA_ARGS__;                                                        \
    }                                                                            \
  }
// An undefined tensor is None; None as an int[] is the empty list (axes: all of them).
OFL_FRONT_ARG(Tensor, optional_tensor, t == ParamType::kTensor || t == ParamType::kOperand);
OFL_FRONT_ARG(std::vector<Tensor>, tensors, t == ParamType::kTensors && !p.optional);
OFL_FRONT_ARG(bool, flag, t == ParamType::kBool && !p.optional);
OFL_FRONT_ARG(int64_t, integer, t == ParamType::kInt && !p.optional);
OFL_FRONT_ARG(std::optional<int64_t>, optional_integer, t == ParamType::kInt);
OFL_FRONT_ARG(double, scalar, (t == ParamType::kFloat || t == ParamType::kNumber) && !p.optional);
OFL_FRONT_ARG(std::optional<double>, optional_number, t == ParamType::kFloat);
OFL_FRONT_ARG(std::string, str, t == ParamType::kStr && !p.optional);
OFL_FRONT_ARG(DType, dtype, t == ParamType::kDType && !p.optional);
OFL_FRONT_ARG(std::optional<DType>, optional_dtype, t == ParamType::kDType);
OFL_FRONT_ARG(std::vector<int64_t>, optional_ints, t == ParamType::kInts);
OFL_FRONT_ARG(Generator*, generator, t == ParamType::kGenerator);
OFL_FRONT_ARG(Device, device, t == ParamType::kDevice);
#undef OFL_FRONT_ARG

template <class F>
struct Front;
template <class R, class... A>
struct Front<R (*)(A...)> {
  static constexpr auto indices() { return std::index_sequence_for<A...>{}; }
  template <size_t... I>
  static CallResult call(R (*f)(A...), const CallArgs& a, std::index_sequence<I...>) {
    R out = f(Arg<std::remove_cvref_t<A>>::get(a, I)...);
    if constexpr (requires { std::tuple_size<R>::value; })  // (values, indices)
      return std::apply([](auto&... t) { return std::vector<Tensor>{t...}; }, out);
    else
      return out;
  }
  template <size_t... I>
  static std::string mismatch(const Schema& s, std::index_sequence<I...>) {
    if (s.params.size() != sizeof...(A))
      return str_cat("it takes ", sizeof...(A), " arguments and the schema ", s.params.size());
    std::string why;
    auto check = [&](const Param& p, bool fits) {
      if (why.empty() && !fits)
        why = str_cat("its parameter for '", p.name, "' cannot take a ", param_type_name(p.type),
                      p.optional ? "?" : "");
    };
    (check(s.params[I], Arg<std::remove_cvref_t<A>>::fits(s.params[I])), ...);
    return why;
  }
};

}  // namespace front_detail

// The call of a signature whose arguments go to the C++ front function F as they are, in order:
// {"flip(Tensor input, int[] dims) -> Tensor", call_front<flip>()}. (An overloaded F is named
// with its type: call_front<static_cast<Tensor (*)(const Tensor&, int64_t)>(max)>().)
template <auto F>
ApiCall call_front() {
  using Traits = front_detail::Front<decltype(F)>;
  ApiCall c = [](const CallArgs& a) { return Traits::call(F, a, Traits::indices()); };
  c.mismatch = [](const Schema& s) { return Traits::mismatch(s, Traits::indices()); };
  return c;
}

}  // namespace ofl::internal
