#include "core/dispatcher.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <optional>

#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "core/primitives.h"

namespace ofl::internal {

namespace {

std::array<KindHandler*, kNumTensorKinds>& handlers() {
  static std::array<KindHandler*, kNumTensorKinds> table{};
  return table;
}

// Local and meta calls: meta outputs get no memory and no kernel runs (run_local).
class LocalHandler : public KindHandler {
 public:
  std::vector<Tensor> run(const OpDef& def, const std::vector<Tensor>& in, const Attrs& attrs,
                          const std::vector<TensorMeta>& out) override {
    return run_local(def, in, attrs, out);
  }
};

const bool builtin_handlers = [] {
  static LocalHandler local;
  handlers()[static_cast<int>(TensorKind::kMeta)] = &local;
  handlers()[static_cast<int>(TensorKind::kLocal)] = &local;
  return true;
}();

KindHandler& handler(TensorKind kind) {
  KindHandler* h = handlers()[static_cast<int>(kind)];
  OFL_CHECK(h, "no handler registered for tensor kind ", static_cast<int>(kind));
  return *h;
}

void check_attrs(const OpDef& def, const Attrs& attrs) {
  const auto& items = attrs.items();
  for (size_t i = 0; i < def.attrs.size(); ++i) {
    const AttrDef& a = def.attrs[i];
    // Front ends usually pass the attributes in the schema's order.
    const bool in_place =
        i < items.size() && (items[i].first == a.name || std::strcmp(items[i].first, a.name) == 0);
    const AttrValue* v = in_place ? &items[i].second : attrs.find(a.name);
    if (!v)
      fail(def.name.c_str(), "missing attribute '", a.name, "' (", attr_type_name(a.type), ")");
    if (v->index() != static_cast<size_t>(a.type))
      fail(def.name.c_str(), "attribute '", a.name, "' must be of type ", attr_type_name(a.type));
  }
  OFL_CHECK(items.size() == def.attrs.size(), def.name, ": attributes ", attrs.str(),
            " do not match its schema");
}

// What one recorded call keeps for its backward, in one allocation.
struct SavedCall {
  const OpDef* def;
  Attrs attrs;
  std::vector<TensorMeta> in_meta;
  std::vector<autograd::SavedTensor> in;
  std::vector<autograd::SavedTensor> out;  // saved once they have their history
  std::vector<uint32_t> recorded;  // op output of each recorded one; empty: all are, in order
  size_t num_out;

  autograd::Grads backward(const autograd::Grads& g, const autograd::Needs& needs) const {
    std::vector<Tensor> ins(in_meta.size()), outs(num_out), grads(num_out);
    for (size_t i = 0; i < in.size(); ++i) ins[i] = in[i].unpack(def->name);
    for (size_t j = 0; j < out.size(); ++j) outs[j] = out[j].unpack(def->name);
    for (size_t k = 0; k < g.size(); ++k) grads[recorded.empty() ? k : recorded[k]] = g[k];
    std::vector<Tensor> result = def->backward({ins, outs, in_meta, grads, needs, attrs});
    OFL_CHECK(result.size() == in_meta.size(), def->name, ": backward gave ", result.size(),
              " gradients for ", in_meta.size(), " inputs");
    return result;
  }
};

// One node for the call; its backward is the op's definition, run through this dispatcher on
// whatever kind of tensors the gradients are.
// `self_before`: an in-place op's input 0 before the call, which its backward sees.
void record_autograd(const OpDef& def, const std::vector<Tensor>& inputs, const Tensor& self_before,
                     const Attrs& attrs, const std::vector<TensorMeta>& in_meta,
                     const std::vector<Tensor>& outputs) {
  // Only floating and complex outputs get a history (indices, masks and counts have no gradient).
  const size_t floating = std::count_if(
      outputs.begin(), outputs.end(), [](const Tensor& t) { return is_differentiable(t.dtype()); });
  if (floating == 0) return;
  auto call =
      std::make_shared<SavedCall>(SavedCall{&def, attrs, in_meta, {}, {}, {}, outputs.size()});
  std::vector<Tensor> some;
  if (floating < outputs.size())
    for (size_t j = 0; j < outputs.size(); ++j)
      if (is_differentiable(outputs[j].dtype())) {
        call->recorded.push_back(static_cast<uint32_t>(j));
        some.push_back(outputs[j]);
      }
  const std::vector<Tensor>& recorded = floating < outputs.size() ? some : outputs;
  if (def.saves & kSaveInputs) {
    call->in.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i)
      call->in.emplace_back(i == 0 && self_before.defined() ? self_before : inputs[i]);
  }
  autograd::record(def.name, inputs, recorded,
                   [call](const autograd::Grads& g, const autograd::Needs& needs) {
                     return call->backward(g, needs);
                   });
  if (def.saves & kSaveOutputs) {
    call->out.reserve(outputs.size());
    for (const Tensor& t : outputs) call->out.emplace_back(t, /*is_output=*/true);
  }
}

// t's meta as ops see it (a global tensor's logical shape), written over m (reusing its shape's
// capacity).
void assign_meta(TensorMeta& m, const Tensor& t) {
  m.defined = t.defined();
  m.wrapped = m.defined && t.is_wrapped_number();
  if (!m.defined) {
    m.shape.clear();
    m.dtype = DType::kFloat32;
    m.device = {};
    return;
  }
  m.shape = t.is_global() ? handler(TensorKind::kGlobal).logical_shape(t) : t.shape();
  m.dtype = t.dtype();
  m.device = t.device();
}

// The input metas of the calls in flight on this thread, one vector per nesting depth, kept
// between calls with their shapes' capacity: a call allocates nothing for its inputs' metas.
class InputMetas {
 public:
  explicit InputMetas(const std::vector<Tensor>& inputs) : stack_(stack()) {
    if (stack_.depth == stack_.metas.size())
      stack_.metas.push_back(std::make_unique<std::vector<TensorMeta>>());
    metas_ = stack_.metas[stack_.depth++].get();
    metas_->resize(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) assign_meta((*metas_)[i], inputs[i]);
  }
  ~InputMetas() { --stack_.depth; }
  InputMetas(const InputMetas&) = delete;
  InputMetas& operator=(const InputMetas&) = delete;
  const std::vector<TensorMeta>& get() const { return *metas_; }

 private:
  struct Stack {
    std::vector<std::unique_ptr<std::vector<TensorMeta>>> metas;
    size_t depth = 0;
  };
  static Stack& stack() {
    thread_local Stack s;
    return s;
  }
  Stack& stack_;
  std::vector<TensorMeta>* metas_;
};

}  // namespace

void set_kind_handler(TensorKind kind, KindHandler* h) {
  handlers()[static_cast<int>(kind)] = h;
}

KindHandler* kind_handler(TensorKind kind) {
  return handlers()[static_cast<int>(kind)];
}

namespace {
thread_local bool tracing_on = false;
}  // namespace

void set_tracing(bool on) {
  tracing_on = on;
}
bool tracing() {
  return tracing_on;
}

TensorKind kind_of(const std::vector<Tensor>& inputs) {
  if (tracing_on) return TensorKind::kTraced;
  TensorKind kind = TensorKind::kLocal;
  for (const Tensor& t : inputs) {
    if (!t.defined()) continue;
    if (t.is_traced()) return TensorKind::kTraced;
    if (t.is_global()) kind = TensorKind::kGlobal;
    if (t.device().is_meta() && kind == TensorKind::kLocal) kind = TensorKind::kMeta;
  }
  return kind;
}

TensorMeta meta_of(const Tensor& t) {
  TensorMeta m;
  assign_meta(m, t);
  return m;
}

std::vector<TensorMeta> infer_metas(const OpDef& def, const std::vector<TensorMeta>& in,
                                    const Attrs& attrs) {
  OFL_CHECK(def.dispatched(), def.name, " has no definition the dispatcher can run");
  if (def.num_inputs >= 0 && in.size() != static_cast<size_t>(def.num_inputs))
    fail(def.name.c_str(), "expects ", def.num_inputs, " tensor inputs, got ", in.size());
  for (size_t i = 0; i < in.size(); ++i)
    if (!in[i].defined && (i >= 32 || !((def.optional_inputs >> i) & 1u)))
      fail(def.name.c_str(), "input ", i, " is required but absent");
  check_attrs(def, attrs);
  if (!def.complex)
    for (const TensorMeta& m : in)
      if (m.defined && is_complex(m.dtype))
        fail<TypeError>(def.name.c_str(), "is not supported for complex64 tensors (got ", m.str(),
                        ")");
  std::vector<TensorMeta> out = def.infer({def.name.c_str(), in, attrs});
  if (!def.complex)
    for (const TensorMeta& m : out)
      if (is_complex(m.dtype))
        fail<TypeError>(def.name.c_str(), "is not supported for complex tensors (asked for a ",
                        dtype_name(m.dtype), " output)");
  return out;
}

void check_writable(const char* op, const Tensor& self) {
  if (!self.defined()) fail(op, "writes into an undefined tensor");
  if (autograd::grad_enabled() && self.requires_grad()) {
    if (self.is_leaf())
      fail(op, "a leaf tensor of shape ", shape_str(self.shape()),
           " that requires grad is used in an in-place operation; wrap it in no_grad()");
    if (self.impl()->is_view)
      fail(op, "in-place change of a view of shape ", shape_str(self.shape()),
           " that requires grad is not supported; clone() it first");
  }
  if (self.numel() == 0) return;  // no element to share (an expanded empty tensor)
  for (int64_t d = 0; d < self.dim(); ++d)
    if (self.shape()[d] > 1 && self.strides()[d] == 0)
      fail(op, "the written-to tensor of shape ", shape_str(self.shape()), " with strides ",
           shape_str(self.strides()),
           " has elements sharing one memory location (an expanded view); clone() it first");
}

std::vector<Tensor> run_local(const OpDef& def, const std::vector<Tensor>& inputs,
                              const Attrs& attrs, const std::vector<TensorMeta>& out,
                              const std::vector<StreamedBlocks>* streamed) {
  if (def.view) return def.view({inputs, out, attrs});  // meta storage views as well
  if (def.inplace && !inputs[0].device().is_meta()) {
    // An in-place op reads its other inputs while writing self: one that overlaps self's
    // memory (x[1:].add_(x[:-1])) is read from a copy taken first.
    std::vector<Tensor> safe = inputs;
    bool copied = false;
    for (size_t i = 1; i < safe.size(); ++i)
      if (safe[i].defined() && safe[i].storage() == inputs[0].storage()) {
        safe[i] = contiguous_copy(safe[i]);
        copied = true;
      }
    if (copied) return run_local(def, safe, attrs, out, streamed);
  }
  std::vector<Tensor> outs;
  outs.reserve(out.size());
  for (size_t j = 0; j < out.size(); ++j)
    outs.push_back(def.inplace && j == 0
                       ? inputs[0]
                       : Tensor::empty(out[j].shape, out[j].dtype, out[j].device));
  if (outs.empty() || !outs[0].device().is_meta()) def.compute({inputs, outs, attrs, streamed});
  if (def.inplace) inputs[0].bump_version();
  return outs;
}

AutocastState& autocast_state() {
  thread_local AutocastState state;
  return state;
}

namespace {

// Whether autocast applies to a tensor on `device`: the autocast device's, or meta ones, which
// stand for tensors on whatever device a plan is priced for (a step planned under autocast is
// priced in its low precision).
bool autocast_applies(const Device& device) {
  return device.type == autocast_state().device || device.is_meta();
}

// The inputs as the op's autocast policy takes them: floating tensors on the autocast device
// cast (through the "to" op, so gradients flow back in the original dtype).
std::vector<Tensor> autocast_inputs(const OpDef& def, const std::vector<Tensor>& inputs) {
  const AutocastState& state = autocast_state();
  static const OpDef& to = op_def("to");
  std::vector<Tensor> out = inputs;
  for (Tensor& t : out) {
    if (!t.defined() || !is_floating(t.dtype()) || !autocast_applies(t.device())) continue;
    const DType want = def.autocast == Autocast::kLowPrecision ? state.dtype : DType::kFloat32;
    const bool cast = def.autocast == Autocast::kLowPrecision
                          ? t.dtype() != want
                          : t.dtype() == DType::kFloat16 || t.dtype() == DType::kBFloat16;
    if (cast) t = dispatch1(to, {t}, {{"dtype", want}});
  }
  return out;
}

// A float32 op's output dtype attribute (sum's, cumsum's) that its front end took from a 16-bit
// input moves up with the input, as PyTorch's fp32_set_opt_dtype policy; null: attrs as given.
std::optional<Attrs> autocast_attrs(const OpDef& def, const std::vector<Tensor>& given,
                                    const Attrs& attrs) {
  if (def.autocast != Autocast::kFloat32 || given.empty() || !given[0].defined()) return {};
  const AttrValue* dtype = attrs.find("dtype");
  const DType* d = dtype ? std::get_if<DType>(dtype) : nullptr;
  if (!d || *d != given[0].dtype() || (*d != DType::kFloat16 && *d != DType::kBFloat16) ||
      !autocast_applies(given[0].device()))
    return {};
  Attrs out = attrs;
  out.set("dtype", DType::kFloat32);
  return out;
}

}  // namespace

std::vector<Tensor> dispatch(const OpDef& def, const std::vector<Tensor>& given,
                             const Attrs& given_attrs) {
  std::vector<Tensor> cast;
  std::optional<Attrs> cast_attrs;
  const bool autocast = def.autocast != Autocast::kAsGiven && autocast_state().enabled;
  if (autocast) {
    cast = autocast_inputs(def, given);
    cast_attrs = autocast_attrs(def, given, given_attrs);
  }
  const std::vector<Tensor>& inputs = autocast ? cast : given;
  const Attrs& attrs = cast_attrs ? *cast_attrs : given_attrs;
  const InputMetas in_meta(inputs);
  std::vector<TensorMeta> out_meta = infer_metas(def, in_meta.get(), attrs);
  if (def.inplace) check_writable(def.name.c_str(), inputs[0]);
  const bool needs_grad = autograd::any_requires_grad(inputs);
  std::vector<Tensor> outs;
  Tensor self_before;
  if (!needs_grad) return handler(kind_of(inputs)).run(def, inputs, attrs, out_meta);
  {
    // Handlers run ops of their own; this call records once. (Without inputs that require
    // grad, nothing they compute from them could record.)
    autograd::RecordedCallGuard no_grad;
    if (def.inplace && def.backward && (def.saves & kSaveInputs))
      self_before = call_op("clone", {inputs[0]});
    outs = handler(kind_of(inputs)).run(def, inputs, attrs, out_meta);
  }
  if (def.backward) {
    record_autograd(def, inputs, self_before, attrs, in_meta.get(), outs);
  } else if (def.inplace && inputs[0].requires_grad()) {
    // New values without a gradient (fill_): a history without inputs stops the gradient here.
    autograd::record(
        def.name, {}, {inputs[0]},
        [](const autograd::Grads&, const autograd::Needs&) -> autograd::Grads { return {}; });
  }
  return outs;
}

Tensor dispatch1(const OpDef& def, const std::vector<Tensor>& inputs, const Attrs& attrs) {
  std::vector<Tensor> outs = dispatch(def, inputs, attrs);
  OFL_CHECK(outs.size() == 1, def.name, " has ", outs.size(), " outputs");
  return outs[0];
}

Tensor call_op(const char* name, const std::vector<Tensor>& inputs, const Attrs& attrs) {
  return dispatch1(op_def(name), inputs, attrs);
}

CallResult call_api(const OpDef& def, const Api& api, const CallArgs& args) {
  if (api.call) return api.call(args);
  std::vector<Tensor> inputs;
  Attrs attrs;
  const std::vector<Param>& params = api.parsed.params;
  for (size_t i = 0; i < params.size(); ++i) {
    const ArgValue& v = args[i];
    switch (params[i].type) {
      case ParamType::kTensor:
      case ParamType::kOperand:
        inputs.push_back(args.optional_tensor(i));
        continue;
      case ParamType::kTensors:
        for (const Tensor& t : args.tensors(i)) inputs.push_back(t);
        continue;
      default:
        break;
    }
    if (args.is_none(i)) continue;  // the op's infer names an attribute it needs
    auto attr = std::find_if(def.attrs.begin(), def.attrs.end(),
                             [&](const AttrDef& a) { return params[i].name == a.name; });
    OFL_CHECK(attr != def.attrs.end(), "signature ", api.schema, " of ", def.name,
              ": no attribute ", params[i].name);
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, int64_t> ||
                        std::is_same_v<T, double> || std::is_same_v<T, std::string> ||
                        std::is_same_v<T, DType> || std::is_same_v<T, std::vector<int64_t>>)
            attrs.set(attr->name, x);
          else
            OFL_CHECK(false, "signature ", api.schema, ": ", params[i].name,
                      " is not an attribute type");
        },
        v);
  }
  std::vector<Tensor> out = dispatch(def, inputs, attrs);
  if (out.size() == 1 && !api.parsed.returns_list && api.parsed.returns.empty())
    return std::move(out[0]);
  return out;
}

}  // namespace ofl::internal
