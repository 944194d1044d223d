#include "core/autograd/node.h"

#include <atomic>

#include "core/autograd/grad_mode.h"
#include "core/dispatcher.h"
#include "core/primitives.h"

namespace ofl::internal::autograd {

namespace {
std::atomic<uint64_t> next_sequence_nr{0};
thread_local bool tls_grad_enabled = true;
}  // namespace

bool grad_enabled() {
  return tls_grad_enabled;
}
void set_grad_enabled(bool enabled) {
  tls_grad_enabled = enabled;
}

namespace {
thread_local Place place_now;
}  // namespace

Place current_place() {
  return place_now;
}

void set_current_place(Place place) {
  place_now = place;
}

Node::Node(std::string name)
    : name_(std::move(name)), seq_(next_sequence_nr++), place_(place_now) {}

SavedTensor::SavedTensor(const Tensor& t, bool is_output) {
  if (!t.defined()) return;
  if (is_output) {
    t_ = t.alias();
    t_.impl()->is_view = true;
    t_.impl()->global = t.impl()->global;
    producer_ = t.grad_fn();
    output_nr_ = t.output_nr();
  } else {
    t_ = t;
  }
  version_ = t.version();
}

Tensor SavedTensor::unpack(const std::string& op) const {
  if (t_.defined() && t_.version() != version_)
    fail(op.c_str(), "a tensor of shape ", shape_str(t_.shape()), " (", dtype_name(t_.dtype()),
         ") that backward needs was modified by an in-place operation after it was saved "
         "(version ",
         t_.version(), ", expected ", version_, "); clone it before changing it in place");
  if (auto fn = producer_.lock()) {
    Tensor out = t_.alias();
    out.impl()->is_view = true;
    out.impl()->global = t_.impl()->global;
    out.set_history(std::move(fn), output_nr_);
    return out;
  }
  return t_;
}

Grads FunctionNode::apply(Grads&& grads) {
  if (!fn_)
    fail(name().c_str(),
         "trying to backward through the graph a second time (or after its saved tensors were "
         "freed); pass retain_graph=True to the first backward");
  Needs needs(next_edges().size());
  for (size_t i = 0; i < needs.size(); ++i) needs[i] = next_edges()[i].valid();
  for (size_t i = 0; i < grads.size(); ++i)
    if (!grads[i].defined()) {
      auto& m = outputs()[i];
      grads[i] = Tensor::empty(m.shape, m.dtype, m.device);
      fill_into(grads[i], 0.0);
      grads[i].impl()->global = m.global;  // zeros are valid under every layout
    }
  return fn_(grads, needs);
}

namespace {
GlobalGradHooks global_hooks;
Tensor (*traced_take)(const Tensor& var, const Tensor& grad) = nullptr;
}  // namespace

void set_traced_grad_hook(Tensor (*take)(const Tensor& var, const Tensor& grad)) {
  traced_take = take;
}

void set_global_grad_hooks(GlobalGradHooks hooks) {
  global_hooks = hooks;
}

const GlobalGradHooks& global_grad_hooks() {
  return global_hooks;
}

void accumulate_grad(Tensor var, const Tensor& g) {
  // Logical shapes: a traced gradient of a global leaf has no shard.
  if (const Shape gs = meta_of(g).shape, vs = meta_of(var).shape; gs != vs)
    fail("AccumulateGrad", "gradient of shape ", shape_str(gs), " does not match the leaf's shape ",
         shape_str(vs));
  Tensor old = var.grad();
  if (!old.defined()) {
    // Steal the gradient only when no other tensor (a view, a user's tensor) shares its memory.
    bool unshared = g.is_contiguous() && g.storage().use_count() == 1 && !g.impl()->is_view;
    Tensor owned = unshared ? g : contiguous_copy(g);
    owned.impl()->global = g.impl()->global;  // a global leaf's gradient stays global
    var.set_grad(owned);
  } else {
    var.set_grad(call_op("add", {old, g}));
  }
}

AccumulateGrad::AccumulateGrad(const Tensor& var) : Node("AccumulateGrad"), var_(var.impl_ptr()) {}

Grads AccumulateGrad::apply(Grads&& grads) {
  auto impl = var_.lock();
  if (!impl || !grads[0].defined()) return {};
  Tensor var(impl);
  Tensor g = grads[0];
  if (var.is_global() && g.is_traced() && traced_take)
    g = traced_take(var, g);
  else if (var.is_global() && global_hooks.take)
    g = global_hooks.take(var, g);
  if (g.defined()) accumulate_grad(var, g);
  return {};
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return {};
  if (t.grad_fn()) return {t.grad_fn(), t.output_nr()};
  auto& meta = t.impl()->meta();
  auto acc = meta.grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t);
    meta.grad_accumulator = acc;
  }
  return {acc, 0};
}

bool any_requires_grad(const std::vector<Tensor>& ts) {
  if (!grad_enabled()) return false;
  for (const auto& t : ts)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

void record(const std::string& name, const std::vector<Tensor>& inputs,
            const std::vector<Tensor>& outputs, BackwardFn fn) {
  auto node = std::make_shared<FunctionNode>(name, std::move(fn));
  node->next_edges().reserve(inputs.size());
  for (const auto& in : inputs) node->next_edges().push_back(gradient_edge(in));
  for (uint32_t i = 0; i < outputs.size(); ++i) {
    Tensor out = outputs[i];
    node->outputs().push_back({out.shape(), out.dtype(), out.device(), out.impl()->global});
    out.set_history(node, i);
  }
}

}  // namespace ofl::internal::autograd
