#include "global/gather_ahead.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "boxing/fused_collectives.h"
#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "ops/shape_ops.h"
#include "sbp/global_info.h"

namespace ofl::internal {

namespace {

// One parameter as an op wanted it: a place in the recorded order.
struct Wanted {
  std::weak_ptr<TensorImpl> param;
  NdSbp to;
  std::vector<int64_t> axes;  // the mesh axes where it goes from split to broadcast
};

// A gathered parameter, good while its shard is the one it was gathered from.
struct Gathered {
  Tensor local;
  const Storage* storage = nullptr;
  uint64_t version = 0;
  const GlobalInfo* layout = nullptr;
};

struct State {
  std::vector<Wanted> order;
  std::unordered_multimap<const TensorImpl*, size_t> index;  // param -> its places in order
  std::unordered_map<size_t, Gathered> ready;                // place -> gathered
  // The parameters in order by their shard's storage: those behind the views a backward makes.
  std::unordered_map<const Storage*, std::weak_ptr<TensorImpl>> by_storage;
};
thread_local State state;  // C++ tests run ranks as threads

bool enabled() {
  static const bool on = [] {
    const char* v = std::getenv("OFL_GATHER_AHEAD");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return on;
}

// The mesh axes where `from` -> `to` is split -> broadcast, or none where it is anything else.
std::vector<int64_t> gathered_axes(const NdSbp& from, const NdSbp& to) {
  std::vector<int64_t> axes;
  for (size_t k = 0; k < from.size(); ++k) {
    if (from[k] == to[k]) continue;
    if (!(from[k].is_split() && to[k].is_broadcast())) return {};
    axes.push_back(int64_t(k));
  }
  return axes;
}

bool still_good(const Gathered& g, const Tensor& param) {
  return g.storage == param.storage().get() && g.version == param.version() &&
         g.layout == param.impl()->global.get();
}

std::optional<size_t> place_of(const Tensor& param, const NdSbp& to) {
  auto [lo, hi] = state.index.equal_range(param.impl());
  for (auto it = lo; it != hi; ++it) {
    const Wanted& w = state.order[it->second];
    if (w.to == to && w.param.lock() == param.impl_ptr()) return it->second;
  }
  return std::nullopt;
}

// A leaf parameter as an op's input sees it: itself, or a permutation of its dimensions
// (Linear's weight.t()): the op's input dimension i is the parameter's perm[i].
struct Seen {
  Tensor param;
  std::vector<int64_t> perm;
};

std::optional<Seen> parameter_behind(const Tensor& t) {
  std::vector<int64_t> identity(size_t(t.dim()));
  for (size_t i = 0; i < identity.size(); ++i) identity[i] = int64_t(i);
  if (t.is_leaf() && t.requires_grad()) return Seen{t, identity};
  // The view's history leads to it, or (a view made without history, in a backward) its shard's
  // storage is a parameter's gathered before.
  std::shared_ptr<TensorImpl> impl;
  if (const auto& fn = t.grad_fn(); fn && fn->next_edges().size() == 1) {
    if (auto* acc = dynamic_cast<autograd::AccumulateGrad*>(fn->next_edges()[0].fn.get()))
      impl = acc->variable();
  } else if (auto it = state.by_storage.find(t.storage().get()); it != state.by_storage.end()) {
    impl = it->second.lock();
  }
  if (!impl || impl->global == nullptr) return std::nullopt;
  Tensor param(impl);
  // The same elements of the same shard, the dimensions permuted.
  if (param.storage() != t.storage() || param.offset() != t.offset() || param.dim() != t.dim())
    return std::nullopt;
  std::vector<int64_t> perm;
  std::vector<bool> used(size_t(t.dim()), false);
  for (int64_t i = 0; i < t.dim(); ++i) {
    int64_t from = -1;
    for (int64_t d = 0; d < t.dim() && from < 0; ++d)
      if (!used[size_t(d)] && param.shape()[size_t(d)] == t.shape()[size_t(i)] &&
          param.strides()[size_t(d)] == t.strides()[size_t(i)] &&
          impl->global->shape[size_t(d)] == t.impl()->global->shape[size_t(i)])
        from = d;
    if (from < 0) return std::nullopt;
    used[size_t(from)] = true;
    perm.push_back(from);
  }
  return Seen{param, perm};
}

// `sbp` of the op's input in the parameter's own dimensions.
NdSbp unpermuted(const NdSbp& sbp, const std::vector<int64_t>& perm) {
  std::vector<Sbp> out;
  for (size_t k = 0; k < sbp.size(); ++k)
    out.push_back(sbp[k].is_split() ? Sbp::split(perm[size_t(sbp[k].axis())]) : sbp[k]);
  return NdSbp(std::move(out));
}

// The parameter in layout `to`: as gathered already, else (where `fill`) gathered now with those
// after it (the bucket).
std::optional<Tensor> gather(const Tensor& param, const NdSbp& to, const std::vector<int64_t>& axes,
                             BoxingContext& ctx, bool fill) {
  const std::optional<size_t> found = place_of(param, to);
  if (found)
    if (auto it = state.ready.find(*found); it != state.ready.end()) {
      if (still_good(it->second, param)) return it->second.local;
      state.ready.erase(it);
    }
  if (!fill) return std::nullopt;
  if (!found) {
    state.order.push_back({param.impl_ptr(), to, axes});
    state.index.emplace(param.impl(), state.order.size() - 1);
    state.by_storage[param.storage().get()] = param.impl_ptr();
  }
  const size_t at = found ? *found : state.order.size() - 1;
  // The bucket: this parameter and those after it in the order that sit on the same placement
  // and mesh axes, in the same dtype and context, not gathered yet, up to DDP's bucket size.
  const GlobalInfo& lead = *param.impl()->global;
  std::vector<size_t> places;
  std::vector<Tensor> params;
  std::vector<GlobalTensor> xs;
  std::vector<NdSbp> targets;
  int64_t bytes = 0;
  for (size_t j = at; j < state.order.size() && (j == at || bytes < kGradBucketBytes); ++j) {
    const Wanted& w = state.order[j];
    std::shared_ptr<TensorImpl> impl = w.param.lock();
    if (!impl || impl->global == nullptr) continue;
    Tensor p(impl);
    if (j != at) {
      const GlobalInfo& gi = *impl->global;
      auto r = state.ready.find(j);
      if (r != state.ready.end() && still_good(r->second, p)) continue;
      if (gi.ctx.get() != &ctx || gi.placement != lead.placement || p.dtype() != param.dtype() ||
          w.axes != axes || gathered_axes(gi.nd_sbp, w.to) != axes || !p.requires_grad() ||
          p.device() != param.device())
        continue;
    }
    GlobalTensor x = as_global(p, "gather_ahead");
    int64_t gathered = x.local.numel() * int64_t(itemsize(x.local.dtype()));
    for (int64_t k : axes) gathered *= lead.placement.mesh()[size_t(k)];
    bytes += gathered;
    places.push_back(j);
    params.push_back(p);
    xs.push_back(std::move(x));
    targets.push_back(w.to);
  }
  std::vector<Tensor> outs = gather_fused(xs, targets, axes, ctx);
  for (size_t k = 0; k < places.size(); ++k)
    state.ready[places[k]] = {outs[k], params[k].storage().get(), params[k].version(),
                              params[k].impl()->global.get()};
  return state.ready[at].local;
}

}  // namespace

std::optional<Tensor> gathered_ahead(const Tensor& input, const GlobalTensor& g, const NdSbp& to,
                                     BoxingContext& ctx) {
  if (!enabled() || g.local.device().is_meta() || gathered_axes(g.nd_sbp, to).empty())
    return std::nullopt;
  std::optional<Seen> seen = parameter_behind(input);
  if (!seen || !seen->param.requires_grad() ||
      !(unpermuted(g.nd_sbp, seen->perm) == seen->param.impl()->global->nd_sbp))
    return std::nullopt;
  const NdSbp want = unpermuted(to, seen->perm);
  const std::vector<int64_t> axes = gathered_axes(seen->param.impl()->global->nd_sbp, want);
  // A call that records history gathers; the others (its backward) take what it gathered.
  std::optional<Tensor> full = gather(seen->param, want, axes, ctx, autograd::recording_call());
  if (!full || seen->param.same(input)) return full;
  autograd::NoGradGuard no_grad;
  return permute(*full, seen->perm);
}

void drop_gathered_ahead() {
  state.ready.clear();
  // Forget the parameters that are gone (the others keep their places: the order stays the
  // same on every rank).
  std::vector<Wanted> live;
  for (Wanted& w : state.order)
    if (!w.param.expired()) live.push_back(std::move(w));
  state.order = std::move(live);
  state.index.clear();
  state.by_storage.clear();
  for (size_t j = 0; j < state.order.size(); ++j) {
    std::shared_ptr<TensorImpl> param = state.order[j].param.lock();
    state.index.emplace(param.get(), j);
    state.by_storage[param->storage.get()] = param;
  }
}

}  // namespace ofl::internal
