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
thread_local bool tls_recording_call = false;
}  // namespace

bool recording_call() {
  return tls_recording_call;
}
RecordedCallGuard::RecordedCallGuard() : prev_(tls_recording_call) {
  tls_recording_call = true;
}
RecordedCallGuard::~RecordedCallGuard() {
  tls_recording_call = prev_;
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

namespace {

std::atomic<int> next_hook_id{1};

// Calls each hook on g, taking what it returns instead; a copy of the list, so a hook may
// remove itself.
Tensor apply_grad_hooks(std::vector<std::pair<int, GradHook>> hooks, Tensor g) {
  for (auto& [id, hook] : hooks)
    if (Tensor out = hook(g); out.defined()) {
      if (out.shape() != g.shape())
        fail("register_hook", "a hook returned a gradient of shape ", shape_str(out.shape()),
             " for a tensor whose gradient has shape ", shape_str(g.shape()));
      g = out;
    }
  return g;
}

LeafHooks& leaf_hooks(const Tensor& t) {
  auto& h = t.impl()->meta().hooks;
  if (!h) h = std::make_shared<LeafHooks>();
  return *h;
}

void require_grad_for_hook(const Tensor& t, const char* op) {
  if (!t.requires_grad())
    fail(op, "cannot register a hook on a tensor of shape ", shape_str(t.shape()),
         " that does not require grad");
}

}  // namespace

void Node::run_grad_hooks(Grads& grads) const {
  for (size_t i = 0; i < grad_hooks_.size() && i < grads.size(); ++i)
    if (!grad_hooks_[i].entries.empty() && grads[i].defined())
      grads[i] = apply_grad_hooks(grad_hooks_[i].entries, grads[i]);
}

int add_grad_hook(const Tensor& t, GradHook hook) {
  require_grad_for_hook(t, "register_hook");
  int id = next_hook_id++;
  if (t.is_leaf()) {
    leaf_hooks(t).grad.entries.emplace_back(id, std::move(hook));
  } else {
    auto& by_output = t.grad_fn()->grad_hooks();
    if (by_output.size() <= t.output_nr()) by_output.resize(t.output_nr() + 1);
    by_output[t.output_nr()].entries.emplace_back(id, std::move(hook));
  }
  return id;
}

int add_post_accumulate_grad_hook(const Tensor& t, PostAccumulateHook hook) {
  require_grad_for_hook(t, "register_post_accumulate_grad_hook");
  if (!t.is_leaf())
    fail("register_post_accumulate_grad_hook", "only a leaf tensor accumulates a gradient; this ",
         "one of shape ", shape_str(t.shape()), " was made by ", t.grad_fn()->name());
  int id = next_hook_id++;
  leaf_hooks(t).post_accumulate.entries.emplace_back(id, std::move(hook));
  return id;
}

bool remove_hook(const Tensor& t, int id) {
  if (!t.defined() || !t.impl()->autograd) return false;
  if (auto& h = t.impl()->autograd->hooks;
      h && (h->grad.remove(id) || h->post_accumulate.remove(id)))
    return true;
  if (auto fn = t.grad_fn())
    for (auto& hooks : fn->grad_hooks())
      if (hooks.remove(id)) return true;
  return false;
}

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

void accumulate_grad(Tensor var, Tensor g) {
  // Logical shapes: a traced gradient of a global leaf has no shard.
  if (const Shape gs = meta_of(g).shape, vs = meta_of(var).shape; gs != vs)
    fail("AccumulateGrad", "gradient of shape ", shape_str(gs), " does not match the leaf's shape ",
         shape_str(vs));
  Tensor old = var.grad();
  if (!old.defined()) {
    // Steal the gradient only when nothing else holds it: not another tensor sharing its memory
    // (a view, a user's tensor), nor the engine handing the same tensor to a second consumer
    // (add's backward gives its gradient to both inputs). Otherwise the leaf owns a copy.
    bool unshared = g.impl_ptr().use_count() == 1 && g.is_contiguous() &&
                    g.storage().use_count() == 1 && !g.impl()->is_view;
    Tensor owned = unshared ? g : contiguous_copy(g);
    owned.impl()->global = g.impl()->global;  // a global leaf's gradient stays global
    var.set_grad(owned);
  } else {
    var.set_grad(add_grads(old, g));
  }
  if (auto& h = var.impl()->meta().hooks; h && !h->post_accumulate.entries.empty()) {
    auto hooks = h->post_accumulate.entries;  // a hook may remove itself
    for (auto& [id, hook] : hooks) hook(var);
  }
}

AccumulateGrad::AccumulateGrad(const Tensor& var) : Node("AccumulateGrad"), var_(var.impl_ptr()) {}

Grads AccumulateGrad::apply(Grads&& grads) {
  auto impl = var_.lock();
  if (!impl || !grads[0].defined()) return {};
  Tensor var(impl);
  Tensor g = std::move(grads[0]);  // so that only g holds it, unless another consumer does
  if (auto& h = impl->meta().hooks; h && !h->grad.entries.empty())
    g = apply_grad_hooks(h->grad.entries, g);
  if (var.is_global() && g.is_traced() && traced_take)
    g = traced_take(var, g);
  else if (var.is_global() && global_hooks.take)
    g = global_hooks.take(var, g);
  if (g.defined()) accumulate_grad(var, std::move(g));
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
