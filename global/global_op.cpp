// The global executor: runs an op on global tensors as DESIGN.md's "Eager, global" describes.
// The signature is sbp/select.h's choice, priced by this context's boxing planner. Autograd is
// the dispatcher's: an op's backward runs as global ops in turn.
//
// Meta global tensors take the same path, on any placement (a simulated 1024-rank one too): their
// shards are meta, so boxing only plans and the local function allocates nothing. With
// ctx->costs set, every call logs what the cost model predicts for it (PredictedCost).
#include "global/global_op.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <sstream>
#include <string_view>
#include <type_traits>
#include <variant>

#include "boxing/fused_collectives.h"
#include "boxing/reshard.h"
#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "global/forced.h"
#include "global/gather_ahead.h"
#include "global/streamed.h"
#include "ops/op_helpers.h"
#include "sbp/global_info.h"
#include "sbp/select.h"

namespace ofl::internal {

namespace {

const GlobalInfo& info(const Tensor& t) {
  return *t.impl()->global;
}

Tensor wrap(const Tensor& local, Shape shape, const Placement& p, NdSbp sbp,
            std::shared_ptr<BoxingContext> ctx) {
  return as_tensor({local, std::move(shape), p, std::move(sbp)}, std::move(ctx));
}

std::string describe(const Tensor& t) {
  if (!t.defined()) return "none";
  std::ostringstream os;
  if (t.is_global())
    os << shape_str(info(t).shape) << " " << info(t).nd_sbp.str() << " on "
       << info(t).placement.str() << (t.device().is_meta() ? " (meta)" : "");
  else
    os << "local " << shape_str(t.shape());
  return os.str();
}

std::string describe_inputs(const GlobalOp& op) {
  std::string s;
  for (size_t i = 0; i < op.inputs.size(); ++i)
    s += (i ? "; " : "") + std::string("input ") + std::to_string(i) + " is " +
         describe(op.inputs[i]);
  return s;
}

// Where the local function being run finds its inputs' shards (shard_offsets).
struct ShardContext {
  const std::vector<Tensor>* inputs;
  std::vector<NdSbp> layouts;
  Placement placement;
  std::vector<int64_t> coords;
  const std::vector<Shape>* out_shapes;  // logical
  std::vector<NdSbp> out_layouts;
  const std::vector<StreamedBlocks>* streamed = nullptr;
};
thread_local const ShardContext* current_shards = nullptr;

class ShardScope {
 public:
  explicit ShardScope(const ShardContext* c) : prev_(current_shards) { current_shards = c; }
  ~ShardScope() { current_shards = prev_; }

 private:
  const ShardContext* prev_;
};

const char* op_name(const GlobalOp& op) {
  return op.def->name.c_str();
}

// The conformance checker's first op (global/forced.h): report the declared 1-d signatures, or
// run the local function on the inputs' pieces as they are and record the local outputs.
[[noreturn]] std::vector<Tensor> run_forced(const GlobalOp& op, const OpDef* def, const SbpQuery& q,
                                            ForcedCall& f) {
  f.seen = true;
  f.op = op_name(op);
  if (f.probe) {
    if (def->sbp) f.declared = def->sbp->signatures(q);
    f.declared.push_back(all_broadcast_signature(op.inputs.size(), op.out_shapes.size()));
  } else {
    std::vector<Tensor> locals;
    const Tensor* first = nullptr;
    for (const Tensor& t : op.inputs) {
      locals.push_back(t.defined() ? t.alias() : Tensor());
      if (!first && t.defined() && t.is_global()) first = &t;
    }
    const GlobalInfo& g = info(*first);
    const auto coords = g.placement.coords_of(g.ctx->world->rank());
    std::vector<Shape> shapes;
    for (const Shape& s : op.out_shapes)
      shapes.push_back(local_shape(s, NdSbp(f.out_sbps), g.placement, *coords));
    ShardContext shards{&op.inputs, {}, g.placement, *coords, &op.out_shapes, {}};
    for (const Tensor& t : op.inputs)
      shards.layouts.push_back(t.defined() && t.is_global() ? info(t).nd_sbp : NdSbp());
    shards.out_layouts.assign(op.out_shapes.size(), NdSbp(f.out_sbps));
    ShardScope scope(&shards);
    autograd::NoGradGuard no_grad;
    f.outputs = op.local(locals, shapes);
  }
  stop_forced_call();
}

}  // namespace

std::vector<int64_t> shard_offsets(size_t input) {
  OFL_CHECK(current_shards && input < current_shards->inputs->size(),
            "shard_offsets outside a global op's local function");
  const Tensor& t = (*current_shards->inputs)[input];
  if (!t.defined()) return {};
  if (!t.is_global()) return std::vector<int64_t>(size_t(t.dim()), 0);
  return local_starts(info(t).shape, current_shards->layouts[input], current_shards->placement,
                      current_shards->coords);
}

std::vector<int64_t> shard_out_offsets(size_t output) {
  OFL_CHECK(current_shards && output < current_shards->out_shapes->size(),
            "shard_out_offsets outside a global op's local function");
  return local_starts((*current_shards->out_shapes)[output], current_shards->out_layouts[output],
                      current_shards->placement, current_shards->coords);
}

const std::vector<StreamedBlocks>* shard_streamed() {
  OFL_CHECK(current_shards, "shard_streamed outside a global op's local function");
  return current_shards->streamed;
}

bool any_global(std::initializer_list<Tensor> ts) {
  for (const Tensor& t : ts)
    if (t.defined() && t.is_global()) return true;
  return false;
}

const Shape& logical_shape(const Tensor& t) {
  return t.is_global() ? info(t).shape : t.shape();
}
std::vector<Shape> local_shapes(const Tensor& t) {
  if (!t.is_global()) fail("local_shapes", "expects a global tensor, got a local ", t.str());
  return local_shapes(info(t).shape, info(t).nd_sbp, info(t).placement);
}
int64_t logical_dim(const Tensor& t) {
  return static_cast<int64_t>(logical_shape(t).size());
}
int64_t logical_numel(const Tensor& t) {
  return numel_of(logical_shape(t));
}

namespace {

// What a global call is checked for and gathers before a signature is chosen.
struct Prepared {
  const Tensor* first = nullptr;  // the first global input
  std::optional<Placement> placement;
  std::shared_ptr<BoxingContext> ctx;
  std::optional<std::vector<int64_t>> coords;  // this rank's; none off the placement
  SbpCall call;
};

// Fills p (its call points into it: p must stay where it is).
void prepare(const GlobalOp& op, Prepared& p) {
  // One placement for every global input; local tensors only as 0-d constants.
  const Tensor* first = nullptr;
  for (const Tensor& t : op.inputs) {
    if (!t.defined()) continue;
    if (t.is_global()) {
      if (!first)
        first = &t;
      else if (!(info(t).placement == info(*first).placement))
        fail(op_name(op), "inputs are on different placements: ", describe_inputs(op),
             "; move them onto one with to_global(placement=...)");
      else if (t.device().is_meta() != first->device().is_meta())
        fail(op_name(op), "mixes meta and real global tensors: ", describe_inputs(op));
    } else if (t.dim() != 0) {
      fail(op_name(op), "mixes local and global tensors: ", describe_inputs(op),
           "; make the local tensor global with to_global(placement, sbp)");
    }
  }
  OFL_CHECK(first, "run_global without a global input");
  const Placement placement = info(*first).placement;
  const std::shared_ptr<BoxingContext> ctx = info(*first).ctx;
  if (!ctx) fail(op_name(op), "the global tensor ", describe(*first), " has no communicator");
  const int me = ctx->world->ranks()[static_cast<size_t>(ctx->world->rank())];
  const auto coords = placement.coords_of(me);
  // A rank outside the placement (another pipeline stage's) computes nothing but still plans the
  // call as the others do: its outputs are empty shards, and an in-place call leaves its input
  // (empty there too) as it is.
  if (op.inplace && !op.inputs[0].is_global())
    fail(op_name(op), "writes into a local tensor from global ones: ", describe_inputs(op));

  SbpCall call{.def = op.def,
               .out_shapes = &op.out_shapes,
               .out_dtype = op.out_dtypes.empty() ? first->dtype() : op.out_dtypes[0],
               .placement = &placement,
               .inplace = op.inplace,
               .attrs = op.typed_attrs};
  for (const Tensor& t : op.inputs) {
    CallInput& in = call.in.emplace_back();
    if (!t.defined()) continue;
    in.shape = &logical_shape(t);
    in.dtype = t.dtype();
    if (t.is_global()) in.layout = &info(t).nd_sbp;
  }
  p.first = first;
  p.placement = placement;
  p.ctx = ctx;
  p.coords = coords;
  p.call = std::move(call);
  p.call.placement = &*p.placement;
}

void encode(std::vector<int64_t>& code, const Shape& shape) {
  code.push_back(int64_t(shape.size()));
  code.insert(code.end(), shape.begin(), shape.end());
}

void encode(std::vector<int64_t>& code, const NdSbp& sbp) {
  code.push_back(int64_t(sbp.size()));
  for (size_t k = 0; k < sbp.size(); ++k)
    code.push_back(sbp[k].is_split()     ? 1000 + sbp[k].axis()
                   : sbp[k].is_partial() ? 100 + int64_t(sbp[k].op())
                                         : 1);
}

void encode(std::vector<int64_t>& code, const AttrValue& v) {
  code.push_back(int64_t(v.index()));
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, double>) {
          code.push_back(std::bit_cast<int64_t>(x));
        } else if constexpr (std::is_same_v<T, std::string>) {
          code.push_back(int64_t(x.size()));
          code.push_back(int64_t(std::hash<std::string>()(x)));
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          code.push_back(int64_t(x.size()));
          code.insert(code.end(), x.begin(), x.end());
        } else {
          code.push_back(int64_t(x));
        }
      },
      v);
}

// A small reshard (latency-bound: a loss's target count, a norm) is kept on its source tensor and
// reused while the shard is unchanged, so a backward that takes the same saved input in the same
// layout (div's divisor) runs no collective again. Every rank keeps the same ones: the same
// tensors, boxed in the same order.
inline constexpr int64_t kRememberedBoxBytes = 64 << 10;
Tensor remembered_reshard(const Tensor& t, const GlobalTensor& g, const NdSbp& to,
                          BoxingContext& ctx, PredictedCost* into) {
  const GlobalInfo& gi = info(t);
  auto kept = std::find_if(gi.boxed.begin(), gi.boxed.end(),
                           [&](const GlobalInfo::Boxed& b) { return b.to == to; });
  if (kept != gi.boxed.end() && kept->version == t.version()) return kept->local;
  Tensor local = reshard(g, g.placement, to, ctx, into).local;
  if (local.device().is_meta() ||
      local.numel() * int64_t(itemsize(local.dtype())) > kRememberedBoxBytes)
    return local;
  if (kept != gi.boxed.end())
    *kept = {to, t.version(), local};  // (written in place since: the old one is stale)
  else
    gi.boxed.push_back({to, t.version(), local});
  return local;
}

// Everything select_signature reads of an eager call, as integers: the memo's key.
std::vector<int64_t> signature_key(const SbpCall& call) {
  std::vector<int64_t> code;
  code.reserve(64);
  code.push_back(int64_t(reinterpret_cast<intptr_t>(call.def)));
  code.push_back(int64_t(call.out_dtype));
  code.push_back(call.inplace);
  const Placement& p = *call.placement;
  code.push_back(int64_t(p.device_type()));
  encode(code, p.mesh());
  code.insert(code.end(), p.ranks().begin(), p.ranks().end());
  for (const CallInput& in : call.in) {
    code.push_back(in.shape != nullptr);
    if (!in.shape) continue;
    encode(code, *in.shape);
    code.push_back(int64_t(in.dtype));
    code.push_back(in.layout != nullptr);
    if (in.layout) encode(code, *in.layout);
  }
  for (const Shape& s : *call.out_shapes) encode(code, s);
  code.push_back(call.owes_nothing != nullptr);
  if (call.owes_nothing)
    for (bool b : *call.owes_nothing) code.push_back(b);
  if (call.attrs)
    for (const auto& [name, value] : call.attrs->items()) {
      code.push_back(int64_t(std::hash<std::string_view>()(name)));
      encode(code, value);
    }
  return code;
}

}  // namespace

std::vector<Tensor> run_global_forced(const GlobalOp& op, ForcedCall& forced) {
  Prepared p;
  prepare(op, p);
  return run_forced(op, op.def, sbp_query(p.call), forced);
}

std::vector<Tensor> run_global(const GlobalOp& op) {
  Prepared p;
  prepare(op, p);
  const Tensor* first = p.first;
  const Placement& placement = *p.placement;
  const std::shared_ptr<BoxingContext>& ctx = p.ctx;
  const auto& coords = p.coords;
  const SbpCall& call = p.call;

  if (!ctx->cache)
    ctx->cache = std::make_shared<PlanCache>(ClusterSpec::default_for(ctx->world->size()));
  PlanCache& cache = *ctx->cache;
  // Where a backward node makes only leaves' gradients, a partial output owes no reduction of
  // its own: the leaves' partial gradients are summed in the fused reductions at the end of
  // backward (take_leaf_grad below).
  std::vector<bool> owes_nothing;
  if (autograd::making_leaf_gradients()) {
    owes_nothing.assign(op.out_shapes.size(), true);
    p.call.owes_nothing = &owes_nothing;  // (`call` is p.call)
  }
  // The same call metadata chooses the same signature: chosen once per cache (the cluster).
  const std::shared_ptr<const SignatureChoice> chosen = cache.signature(signature_key(call), [&] {
    return select_signature(
        call, cache.cluster(),
        [&](const Shape& shape, DType dtype, const NdSbp& from, const NdSbp& to) {
          auto plan = cache.get(shape, dtype, placement, from, placement, to);
          return Transition{plan->seconds, plan->num_communication_steps()};
        });
  });
  const SignatureChoice& choice = *chosen;
  const NdSbpSignature& sig = choice.sig;
  // What the call is predicted to cost, kept only where costs are recorded.
  PredictedCost predicted;
  if (ctx->costs) {
    predicted = {.op = op_name(op), .signature = sig.str()};
    predicted.flops = choice.flops;
    predicted.compute_seconds = choice.compute_seconds;
  }

  if (!coords) {
    std::vector<Tensor> result;
    for (size_t j = 0; j < op.out_shapes.size(); ++j)
      result.push_back(op.inplace && j == 0 ? op.inputs[0]
                                            : wrap(outside_shard(op.out_shapes[j], op.out_dtypes[j],
                                                                 first->device()),
                                                   op.out_shapes[j], placement, sig.out[j], ctx));
    if (!ctx->costs) return result;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const Tensor& t = op.inputs[i];
      if (t.defined() && t.is_global() && !(info(t).nd_sbp == sig.in[i]))
        predicted.add(
            *cache.get(info(t).shape, t.dtype(), placement, info(t).nd_sbp, placement, sig.in[i]));
    }
    ctx->costs->push_back(std::move(predicted));
    return result;
  }

  // Reshard the inputs, but for those the compute streams.
  std::vector<Tensor> locals(op.inputs.size());
  std::vector<StreamedBlocks> streamed;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const Tensor& t = op.inputs[i];
    if (!t.defined()) continue;
    if (!t.is_global()) {
      locals[i] = t;
      continue;
    }
    GlobalTensor g = as_global(t, op_name(op));
    if (g.nd_sbp == sig.in[i]) {
      locals[i] = g.local;
    } else if (auto axes = streamed_axes(*op.def, i, g.nd_sbp, sig.in[i]); !axes.empty()) {
      streamed.resize(op.inputs.size());
      if (!t.device().is_meta())  // (a meta shard computes nothing, on a simulated world too)
        streamed[i] = streamed_blocks(g.shape, g.nd_sbp, axes, op.def->streamed_dim, placement,
                                      *coords, *ctx);
      locals[i] = g.local;
    } else if (auto ahead = gathered_ahead(t, g, sig.in[i], *ctx)) {
      locals[i] = std::move(*ahead);
    } else {
      locals[i] = remembered_reshard(t, g, sig.in[i], *ctx, ctx->costs ? &predicted : nullptr);
    }
  }
  std::vector<Shape> local_shapes;
  for (size_t j = 0; j < op.out_shapes.size(); ++j)
    local_shapes.push_back(local_shape(op.out_shapes[j], sig.out[j], placement, *coords));
  const ShardContext shards{&op.inputs,
                            sig.in,
                            placement,
                            *coords,
                            &op.out_shapes,
                            sig.out,
                            streamed.empty() ? nullptr : &streamed};
  std::vector<Tensor> outs;
  {
    ShardScope scope(&shards);
    outs = op.local(locals, local_shapes);
  }
  OFL_CHECK(outs.size() == op.out_shapes.size(), op_name(op), ": local function gave ", outs.size(),
            " outputs");
  if (ctx->costs) ctx->costs->push_back(std::move(predicted));
  std::vector<Tensor> result;
  for (size_t j = 0; j < outs.size(); ++j) {
    if (outs[j].shape() != local_shapes[j])
      fail(op_name(op), "internal error: signature ", sig.str(), " gave a local output of shape ",
           shape_str(outs[j].shape()), " where ", shape_str(local_shapes[j]), " was expected (",
           describe_inputs(op), ")");
    result.push_back(op.inplace && j == 0
                         ? op.inputs[0]
                         : wrap(outs[j], op.out_shapes[j], placement, sig.out[j], ctx));
  }
  return result;
}

namespace {
TracedBoxing traced_boxing = nullptr;
}  // namespace

void set_traced_boxing(TracedBoxing box) {
  traced_boxing = box;
}

Tensor broadcast_on(const Tensor& local, const Tensor& like) {
  const GlobalInfo& g = info(like);
  NdSbp all_b(std::vector<Sbp>(g.placement.mesh().size(), Sbp::broadcast()));
  if (local.is_traced()) {
    OFL_CHECK(traced_boxing, "broadcast_on: a traced tensor without graph mode's boxing hook");
    return traced_boxing("broadcast_on", local, g.placement, all_b);
  }
  return wrap(local, local.shape(), g.placement, std::move(all_b), g.ctx);
}

Tensor full_value(const Tensor& t) {
  const GlobalInfo& g = info(t);
  return to_full(as_global(t, "full_value"), *g.ctx);
}

// A parameter's gradient takes the parameter's own layout: for B parameters fed split data this
// is the data-parallel all-reduce, for split parameters (ZeRO) a reduce-scatter. Those
// reductions (a P(sum) gradient of a leaf that is B or S on those mesh axes, and laid out alike
// elsewhere) wait for the end of backward and go out fused, as DDP's buckets do; every other
// gradient is resharded when it arrives.
namespace {

struct PendingGrad {
  Tensor var, grad;
  std::vector<int64_t> axes;  // the mesh axes where the gradient is P(sum) and the leaf is not
  bool scatter = false;       // the leaf is split on one of them
};
thread_local std::vector<PendingGrad> pending_grads;  // C++ tests run ranks as threads

// The mesh axes a fused reduction would sum over, or none when grad -> var's layout is not only
// P(sum) -> B or S.
std::vector<int64_t> reduced_axes(const GlobalInfo& g, const GlobalInfo& v) {
  std::vector<int64_t> axes;
  if (g.placement != v.placement) return {};
  for (size_t k = 0; k < v.nd_sbp.size(); ++k) {
    const Sbp &from = g.nd_sbp[k], &to = v.nd_sbp[k];
    if (from == to) continue;
    if (!(from.is_partial() && from.op() == PartialOp::kSum && !to.is_partial())) return {};
    axes.push_back(int64_t(k));
  }
  return axes;
}

Tensor take_leaf_grad(const Tensor& var, const Tensor& grad) {
  const GlobalInfo& v = info(var);
  if (!grad.is_global())
    fail("AccumulateGrad", "a global leaf ", describe(var), " got a local gradient of shape ",
         shape_str(grad.shape()));
  const GlobalInfo& g = info(grad);
  if (g.placement == v.placement && g.nd_sbp == v.nd_sbp) return grad;
  if (auto axes = reduced_axes(g, v); !axes.empty()) {
    bool scatter = false;
    for (int64_t k : axes) scatter |= v.nd_sbp[size_t(k)].is_split();
    pending_grads.push_back({var, grad, std::move(axes), scatter});
    return Tensor();
  }
  return wrap(reshard(as_global(grad, "AccumulateGrad"), v.placement, v.nd_sbp, *g.ctx).local,
              v.shape, v.placement, v.nd_sbp, g.ctx);
}

// Fuses the deferred reductions per (context, placement, axes, dtype, scatter), in the order the
// gradients arrived, which is the same on every rank.
void flush_leaf_grads(bool ok) {
  drop_gathered_ahead();  // a backward ends the pass that gathered them
  std::vector<PendingGrad> todo = std::move(pending_grads);
  pending_grads.clear();
  if (!ok) return;
  std::vector<bool> done(todo.size(), false);
  for (size_t first = 0; first < todo.size(); ++first) {
    if (done[first]) continue;
    const GlobalInfo& key = info(todo[first].grad);
    std::vector<size_t> group;
    for (size_t i = first; i < todo.size(); ++i) {
      const GlobalInfo& g = info(todo[i].grad);
      if (!done[i] && g.ctx == key.ctx && g.placement == key.placement &&
          todo[i].axes == todo[first].axes && todo[i].scatter == todo[first].scatter &&
          todo[i].grad.dtype() == todo[first].grad.dtype()) {
        group.push_back(i);
        done[i] = true;
      }
    }
    std::vector<GlobalTensor> grads;
    std::vector<NdSbp> targets;
    for (size_t i : group) {
      grads.push_back(as_global(todo[i].grad, "AccumulateGrad"));
      targets.push_back(info(todo[i].var).nd_sbp);
    }
    auto sums = reduce_fused(grads, targets, todo[first].axes, *key.ctx, kGradBucketBytes);
    for (size_t j = 0; j < group.size(); ++j) {
      const GlobalInfo& v = info(todo[group[j]].var);
      autograd::accumulate_grad(todo[group[j]].var,
                                wrap(sums[j], v.shape, v.placement, v.nd_sbp, key.ctx));
    }
  }
}

const bool grad_layout_registered = [] {
  autograd::set_global_grad_hooks({take_leaf_grad, flush_leaf_grads});
  return true;
}();

}  // namespace

}  // namespace ofl::internal
