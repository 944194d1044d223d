#include "graph/trace.h"

#include <algorithm>

#include "core/autograd/engine.h"
#include "core/autograd/node.h"
#include "core/dispatcher.h"
#include "core/random.h"
#include "global/global_op.h"
#include "sbp/global_info.h"

namespace ofl::internal::graph {

namespace {

thread_local Trace* open_trace = nullptr;

// The dispatcher's traced kind: the call becomes a node of the open trace.
class TraceHandler : public KindHandler {
 public:
  std::vector<Tensor> run(const OpDef& def, const std::vector<Tensor>& in, const Attrs& attrs,
                          const std::vector<TensorMeta>& out) override {
    Trace* trace = Trace::current();
    if (!trace)
      fail(def.name.c_str(),
           "a traced tensor is used after its graph's tracing ended (a value "
           "kept from inside build()); use the graph's outputs instead");
    return trace->record(def, in, attrs, out);
  }
};

// A global leaf's traced gradient takes the leaf's layout through a boxing node (eager mode's
// deferred reductions, which the bucketing pass fuses).
Tensor traced_leaf_grad(const Tensor& var, const Tensor& grad) {
  Trace* trace = Trace::current();
  if (!trace) fail("AccumulateGrad", "a traced gradient reached a leaf after tracing ended");
  return trace->defers_grad_reductions() ? grad : trace->box_grad(var, grad);
}

Tensor traced_boxing(const char* op, const Tensor& x, const Placement& placement,
                     const NdSbp& nd_sbp) {
  Trace* trace = Trace::current();
  if (!trace) fail(op, "a traced tensor is used after its graph's tracing ended");
  return trace->box(op, x, placement, nd_sbp);
}

const bool registered = [] {
  static TraceHandler handler;
  set_kind_handler(TensorKind::kTraced, &handler);
  autograd::set_traced_grad_hook(traced_leaf_grad);
  set_traced_boxing(traced_boxing);
  return true;
}();

}  // namespace

Trace::Trace()
    : prev_(open_trace),
      open_(true),
      generator_offset_(default_generator().offset()),
      last_offset_(generator_offset_) {
  open_trace = this;
  set_tracing(true);
}

Trace::~Trace() {
  close();
}

void Trace::close() {
  if (!open_) return;
  open_ = false;
  // The counters random front ends reserved while tracing drew nothing: the graph's runs take
  // them (random_counters), as the eager calls would have.
  default_generator().set_offset(generator_offset_);
  open_trace = prev_;
  set_tracing(prev_ != nullptr);
}

Trace* Trace::current() {
  return open_trace;
}

Tensor Trace::input(const Tensor& example) {
  if (example.is_global() && !ctx_) ctx_ = example.impl()->global->ctx;
  return traced(graph_.add_input(value_like(example)), false);
}

Tensor Trace::box_grad(const Tensor& param, const Tensor& grad,
                       const std::optional<NdSbp>& nd_sbp) {
  const GlobalInfo& v = *param.impl()->global;
  Tensor out = box("AccumulateGrad", grad, v.placement, nd_sbp ? *nd_sbp : v.nd_sbp,
                   /*param_grad=*/true);
  graph_.nodes().back().grad_of = value_of("AccumulateGrad", param);
  return out;
}

Tensor Trace::box(const char* op, const Tensor& x, const Placement& placement, const NdSbp& nd_sbp,
                  bool param_grad) {
  const int in = value_of(op, x);
  const Value& from = graph_.values()[in];
  // A local value becomes global only as a constant every rank computes alike (broadcast_on).
  if (!from.is_global() && (nd_sbp.empty() || !nd_sbp.all_broadcast()))
    fail(op, "expects a global tensor, got a local ", shape_str(from.shape), " one while tracing");
  if (!nd_sbp.empty()) validate_sbp(op, from.shape, nd_sbp, placement);
  Value to = from;
  to.placement = placement;
  to.nd_sbp = nd_sbp;
  const int out = graph_.add_value(std::move(to));
  Node node = boxing_node(in, out, param_grad);
  place(node);
  graph_.add_node(std::move(node));
  return traced(out, false);
}

std::vector<std::optional<Placement>> Trace::input_moves(const std::vector<Tensor>& outputs) const {
  const std::vector<Value>& values = graph_.values();
  std::vector<int> results;
  for (const Tensor& t : outputs)
    if (t.is_traced() && t.impl()->traced->trace == this) results.push_back(t.impl()->traced->id);
  std::vector<std::optional<Placement>> moves;
  for (int in : graph_.inputs()) {
    const Value& v = values[size_t(in)];
    // The input's cone: what is computed from it alone (local scalars aside) where it is given,
    // as targets.view(-1) and the count of ignored targets are. It moves with the input when all
    // that leaves it goes to one other placement.
    std::unordered_set<int> cone = {in};
    std::optional<Placement> to;
    bool movable = v.is_global();
    for (const Node& n : graph_.nodes()) {
      if (!movable) break;
      if (std::none_of(n.inputs.begin(), n.inputs.end(), [&](int id) { return cone.count(id); }))
        continue;
      for (int id : n.inputs)
        movable &= id < 0 || cone.count(id) || !values[size_t(id)].is_global();
      for (int id : n.outputs) {
        const Value& out = values[size_t(id)];
        if (out.is_global() && *out.placement == *v.placement) {
          cone.insert(id);
        } else {
          movable &=
              n.kind == NodeKind::kBoxing && out.is_global() && (!to || *to == *out.placement);
          to = out.placement;
        }
      }
    }
    for (int id : results) movable &= !cone.count(id);
    moves.push_back(movable ? to : std::nullopt);
  }
  return moves;
}

void Trace::place(Node& node) const {
  const autograd::Place p = autograd::current_place();
  node.backward = autograd::executing_backward();
  node.layer = p.layer;
  node.stage = p.stage;
  node.micro = micro_batch_;
}

Tensor Trace::traced(int id, bool is_view, const Tensor* like) {
  const Value& v = graph_.values()[id];
  auto impl = std::make_shared<TensorImpl>();
  const size_t nbytes = size_t(nbytes_of(v.shape, itemsize(v.dtype), "graph"));
  impl->storage = std::make_shared<Storage>(nullptr, nbytes, v.device, nullptr);
  impl->shape = v.shape;
  const bool strided = like && like->shape() == v.shape;
  impl->strides = strided ? like->strides() : contiguous_strides(v.shape);
  impl->dtype = v.dtype;
  impl->is_view = strided ? like->impl()->is_view : is_view;
  impl->traced = std::make_shared<TraceValue>(TraceValue{this, id});
  if (v.is_global())
    impl->global = std::make_shared<GlobalInfo>(GlobalInfo{v.shape, *v.placement, v.nd_sbp, ctx_});
  return Tensor(std::move(impl));
}

int Trace::value_of(const char* op, const Tensor& t) {
  if (!t.defined()) return -1;
  if (t.is_traced()) {
    if (t.impl()->traced->trace != this)
      fail(op, "a traced tensor from another graph's trace is used here");
    return t.impl()->traced->id;
  }
  auto [it, fresh] = captured_.try_emplace(t.impl(), -1);
  if (fresh) {
    if (t.is_global() && !ctx_) ctx_ = t.impl()->global->ctx;
    it->second = graph_.add_variable(t);
  }
  return it->second;
}

void Trace::meet(const char* op, const std::vector<Tensor>& in, std::vector<int>& ids) {
  const Placement* narrow = nullptr;
  for (int id : ids)
    if (id >= 0 && graph_.values()[size_t(id)].is_global()) {
      const Placement& p = *graph_.values()[size_t(id)].placement;
      if (!narrow || p.size() < narrow->size()) narrow = &p;
    }
  if (!narrow) return;
  const Placement target = *narrow;  // ids' values may move as boxes are added
  for (size_t k = 0; k < ids.size(); ++k) {
    if (ids[k] < 0 || !graph_.values()[size_t(ids[k])].is_global()) continue;
    const Placement& p = *graph_.values()[size_t(ids[k])].placement;
    if (p == target || autograd::needs_grad(in[k])) continue;
    bool covers = true;
    for (int r : target.ranks()) covers &= p.contains(r);
    if (covers) ids[k] = value_of(op, box(op, in[k], target, NdSbp()));
  }
}

std::optional<Placement> Trace::placement_of(const char* op, const std::vector<int>& inputs) const {
  const Value* first = nullptr;
  for (int id : inputs) {
    if (id < 0) continue;
    const Value& v = graph_.values()[id];
    if (v.is_global() && !first) first = &v;
    if (v.is_global() && *v.placement != *first->placement)
      fail(op, "inputs are on different placements (", first->placement->str(), " and ",
           v.placement->str(), ") while tracing; move them onto one with to_global(placement=...)");
  }
  if (!first) return std::nullopt;
  for (int id : inputs)
    if (id >= 0 && !graph_.values()[id].is_global() && !graph_.values()[id].shape.empty())
      fail(op, "mixes a local tensor of shape ", shape_str(graph_.values()[id].shape),
           " with global ones on ", first->placement->str(),
           " while tracing; make it global with to_global(placement, sbp)");
  return first->placement;
}

namespace {

// A meta tensor laid out as the traced or captured tensor t is in eager mode (a global one by its
// logical shape, as the trace sees it): a view op run on such stand-ins gives the strides its
// outputs will have when the graph runs, and raises where eager mode would (view of a transpose).
Tensor meta_stand_in(const Tensor& t) {
  if (!t.defined()) return t;
  const bool logical = t.is_global() && !t.is_traced();
  const Shape shape = logical ? t.impl()->global->shape : t.shape();
  const Shape strides = logical ? contiguous_strides(shape) : t.strides();
  int64_t extent = 1;  // elements from the offset to the last one addressed, plus one
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] == 0) extent = 0;
  for (size_t d = 0; d < shape.size() && extent > 0; ++d) extent += (shape[d] - 1) * strides[d];
  const int64_t offset = logical ? 0 : t.offset();
  auto storage = std::make_shared<Storage>(nullptr, size_t(offset + extent) * itemsize(t.dtype()),
                                           Device{DeviceType::kMeta}, nullptr);
  Tensor out = Tensor::view_of(std::move(storage), shape, strides, offset, t.dtype());
  out.impl()->is_view = t.impl()->is_view;
  return out;
}

}  // namespace

std::vector<Tensor> Trace::record(const OpDef& def, const std::vector<Tensor>& in,
                                  const Attrs& attrs, const std::vector<TensorMeta>& out) {
  const char* op = def.name.c_str();
  std::vector<Tensor> layouts;  // a view op's outputs as eager mode lays them out
  if (def.view) {
    std::vector<Tensor> stand_ins;
    for (const Tensor& t : in) stand_ins.push_back(meta_stand_in(t));
    layouts = def.view({stand_ins, out, attrs});
  }
  if (def.inplace && in[0].is_traced() && in[0].impl()->is_view)
    fail(op, "writes in place through a view of shape ", shape_str(in[0].shape()),
         " while tracing; write into the viewed tensor itself (a cache written as "
         "cache[:, a:b] = x: cache.index_copy_(1, positions, x)), or clone() the view first");
  Node node = op_node(def, {}, {}, attrs);
  place(node);
  // Random ops carry the seed and the first counter their front end reserved; the generator has
  // moved past the reservation since. Only draws from the default generator are drawn afresh at
  // each run: an op given a generator of its own (with the same seed, even) keeps its values.
  const Generator& g = default_generator();
  if (attrs.has("seed") && attrs.has("offset")) {
    const auto offset = static_cast<uint64_t>(attrs.get<int64_t>("offset"));
    // The generator set back to draw the same values again (checkpoint's recompute) starts at
    // an offset drawn before.
    const bool from_default = offset == last_offset_ || drawn_.count(offset);
    if (from_default && static_cast<uint64_t>(attrs.get<int64_t>("seed")) == g.seed() &&
        g.offset() > offset) {
      node.random_counters = g.offset() - offset;
      node.replays_draws = !drawn_.insert(offset).second;
    }
  }
  last_offset_ = g.offset();
  node.inputs.reserve(in.size());
  for (const Tensor& t : in) node.inputs.push_back(value_of(op, t));
  meet(op, in, node.inputs);
  const std::optional<Placement> placement = placement_of(op, node.inputs);
  std::vector<Tensor> outputs;
  for (size_t j = 0; j < out.size(); ++j) {
    Value v{out[j].shape, out[j].dtype, out[j].device, placement, {}};
    if (def.inplace && j == 0) v.nd_sbp = graph_.values()[node.inputs[0]].nd_sbp;
    const int id = graph_.add_value(std::move(v));
    node.outputs.push_back(id);
    if (def.inplace && j == 0) {
      // SSA: the written tensor now stands for the node's output. A captured one (a parameter
      // or optimizer state updated in place) is written at run time, as in eager mode.
      if (in[0].is_traced())
        in[0].impl()->traced = std::make_shared<TraceValue>(TraceValue{this, id});
      else
        captured_[in[0].impl()] = id;
      outputs.push_back(in[0]);
    } else {
      outputs.push_back(
          traced(id, def.view != nullptr, j < layouts.size() ? &layouts[j] : nullptr));
    }
  }
  graph_.add_node(std::move(node));
  return outputs;
}

Graph Trace::finish(const std::vector<Tensor>& outputs) {
  std::vector<int> ids;
  for (const Tensor& t : outputs) {
    if (!t.defined()) fail("graph", "build() returned None among its outputs");
    ids.push_back(value_of("graph", t));
  }
  graph_.set_outputs(std::move(ids));
  close();
  return std::move(graph_);
}

}  // namespace ofl::internal::graph
