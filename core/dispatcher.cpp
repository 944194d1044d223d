#include "core/dispatcher.h"

#include <array>

#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "core/primitives.h"

namespace ofl {

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
  for (const AttrDef& a : def.attrs) {
    if (!attrs.has(a.name))
      fail(def.name.c_str(), "missing attribute '", a.name, "' (", attr_type_name(a.type), ")");
    if (attrs.value(a.name).index() != static_cast<size_t>(a.type))
      fail(def.name.c_str(), "attribute '", a.name, "' must be of type ", attr_type_name(a.type));
  }
  OFL_CHECK(attrs.items().size() == def.attrs.size(), def.name, ": attributes ", attrs.str(),
            " do not match its schema");
}

// One node for the call; its backward is the op's definition, run through this dispatcher on
// whatever kind of tensors the gradients are.
// `self_before`: an in-place op's input 0 before the call, which its backward sees.
void record_autograd(const OpDef& def, const std::vector<Tensor>& inputs, const Tensor& self_before,
                     const Attrs& attrs, std::vector<TensorMeta> in_meta,
                     const std::vector<Tensor>& outputs) {
  std::vector<Tensor> recorded;
  std::vector<size_t> index;  // op output of each recorded one
  for (size_t j = 0; j < outputs.size(); ++j)
    if (is_floating(outputs[j].dtype())) {
      recorded.push_back(outputs[j]);
      index.push_back(j);
    }
  if (recorded.empty()) return;
  std::vector<autograd::SavedTensor> saved_in;
  if (def.saves & kSaveInputs)
    for (size_t i = 0; i < inputs.size(); ++i)
      saved_in.emplace_back(i == 0 && self_before.defined() ? self_before : inputs[i]);
  // Outputs are saved once they have their history (their producer is this node, held weakly).
  auto saved_out = std::make_shared<std::vector<autograd::SavedTensor>>();
  const size_t num_out = outputs.size();
  autograd::record(
      def.name, inputs, recorded,
      [&def, attrs, in_meta = std::move(in_meta), saved_in = std::move(saved_in), saved_out, index,
       num_out](const autograd::Grads& g, const autograd::Needs& needs) -> autograd::Grads {
        std::vector<Tensor> in(in_meta.size()), out(num_out), grads(num_out);
        for (size_t i = 0; i < saved_in.size(); ++i) in[i] = saved_in[i].unpack(def.name);
        for (size_t j = 0; j < saved_out->size(); ++j) out[j] = (*saved_out)[j].unpack(def.name);
        for (size_t k = 0; k < index.size(); ++k) grads[index[k]] = g[k];
        std::vector<Tensor> result = def.backward({in, out, in_meta, grads, needs, attrs});
        OFL_CHECK(result.size() == in_meta.size(), def.name, ": backward gave ", result.size(),
                  " gradients for ", in_meta.size(), " inputs");
        return result;
      });
  if (def.saves & kSaveOutputs)
    for (const Tensor& t : outputs) saved_out->emplace_back(t, /*is_output=*/true);
}

}  // namespace

void set_kind_handler(TensorKind kind, KindHandler* h) {
  handlers()[static_cast<int>(kind)] = h;
}

TensorKind kind_of(const std::vector<Tensor>& inputs) {
  TensorKind kind = TensorKind::kLocal;
  for (const Tensor& t : inputs) {
    if (!t.defined()) continue;
    if (t.is_global()) return TensorKind::kGlobal;
    if (t.device().is_meta()) kind = TensorKind::kMeta;
  }
  return kind;
}

TensorMeta meta_of(const Tensor& t) {
  if (!t.defined()) return {{}, DType::kFloat32, {}, false, false};
  const Shape& shape = t.is_global() ? handler(TensorKind::kGlobal).logical_shape(t) : t.shape();
  return {shape, t.dtype(), t.device(), true, t.is_wrapped_number()};
}

std::vector<TensorMeta> infer_metas(const OpDef& def, const std::vector<TensorMeta>& in,
                                    const Attrs& attrs) {
  OFL_CHECK(def.dispatched(), def.name, " has no definition the dispatcher can run");
  if (def.num_inputs >= 0 && in.size() != static_cast<size_t>(def.num_inputs))
    fail(def.name.c_str(), "expects ", def.num_inputs, " tensor inputs, got ", in.size());
  check_attrs(def, attrs);
  return def.infer({def.name.c_str(), in, attrs});
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
  for (int64_t d = 0; d < self.dim(); ++d)
    if (self.shape()[d] > 1 && self.strides()[d] == 0)
      fail(op, "the written-to tensor of shape ", shape_str(self.shape()), " with strides ",
           shape_str(self.strides()),
           " has elements sharing one memory location (an expanded view); clone() it first");
}

std::vector<Tensor> run_local(const OpDef& def, const std::vector<Tensor>& inputs,
                              const Attrs& attrs, const std::vector<TensorMeta>& out) {
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
    if (copied) return run_local(def, safe, attrs, out);
  }
  std::vector<Tensor> outs;
  outs.reserve(out.size());
  for (size_t j = 0; j < out.size(); ++j)
    outs.push_back(def.inplace && j == 0
                       ? inputs[0]
                       : Tensor::empty(out[j].shape, out[j].dtype, out[j].device));
  if (outs.empty() || !outs[0].device().is_meta()) def.compute({inputs, outs, attrs});
  if (def.inplace) inputs[0].bump_version();
  return outs;
}

std::vector<Tensor> dispatch(const OpDef& def, const std::vector<Tensor>& inputs,
                             const Attrs& attrs) {
  std::vector<TensorMeta> in_meta;
  in_meta.reserve(inputs.size());
  for (const Tensor& t : inputs) in_meta.push_back(meta_of(t));
  std::vector<TensorMeta> out_meta = infer_metas(def, in_meta, attrs);
  if (def.inplace) check_writable(def.name.c_str(), inputs[0]);
  const bool needs_grad = autograd::any_requires_grad(inputs);
  std::vector<Tensor> outs;
  Tensor self_before;
  {
    autograd::NoGradGuard no_grad;  // handlers run ops of their own; this call records once
    if (def.inplace && needs_grad && def.backward && (def.saves & kSaveInputs))
      self_before = call_op("clone", {inputs[0]});
    outs = handler(kind_of(inputs)).run(def, inputs, attrs, out_meta);
  }
  if (!needs_grad) return outs;
  if (def.backward) {
    record_autograd(def, inputs, self_before, attrs, std::move(in_meta), outs);
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

}  // namespace ofl
