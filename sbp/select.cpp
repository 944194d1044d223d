#include "sbp/select.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace ofl::internal {

namespace {

// Candidate order: price, then communication steps, then output memory, then broadcast over
// partial when both are free (B is a valid P(max)).
struct Ranked {
  SignatureChoice choice;
  int comm_steps = 0;
  double out_elems = 0;
  int partial_outs = 0;
};

bool better(const Ranked& a, const Ranked& b) {
  const double x = a.choice.price(), y = b.choice.price();
  const double tol = 1e-12 + 1e-9 * std::max(x, y);
  if (std::abs(x - y) > tol) return x < y;
  if (a.comm_steps != b.comm_steps) return a.comm_steps < b.comm_steps;
  if (a.out_elems != b.out_elems) return a.out_elems < b.out_elems;
  return a.partial_outs < b.partial_outs;
}

double local_fraction(const NdSbp& sbp, const Placement& p) {
  double f = 1;
  for (size_t k = 0; k < sbp.size(); ++k)
    if (sbp[k].is_split()) f /= static_cast<double>(p.mesh()[k]);
  return f;
}

// A partial output owes a reduction to whatever consumes it unpartialled: priced at its cheapest,
// a reduce-scatter onto the largest axis or, where an all-reduce is cheaper (a tree's log-depth
// latency on a small tensor over many ranks), an all-reduce. Without it the choice would favour
// signatures that only move the bill to the next op (a column-parallel matmul fed split
// activations through an S(k) signature, and then a reduction of its much larger output). A 0-d
// output owes nothing: its reduction is latency only and often never due (a loss's backward
// takes it partial).
double owed_seconds(const SbpCall& call, const Shape& shape, const NdSbp& out,
                    const TransitionCost& transition) {
  if (!out.any_partial() || shape.empty()) return 0;
  auto reduced_to = [&](Sbp target) {
    std::vector<Sbp> axes = out.axes();
    for (Sbp& s : axes)
      if (s.is_partial()) s = target;
    return transition(shape, call.out_dtype, out, NdSbp(std::move(axes))).seconds;
  };
  const Sbp split = Sbp::split(std::max_element(shape.begin(), shape.end()) - shape.begin());
  return std::min(reduced_to(split), reduced_to(Sbp::broadcast()));
}

// `sbp` with the mesh axes where every input is broadcast made broadcast too.
NdSbp without_introduced(const NdSbp& sbp, const std::vector<bool>& replicated) {
  std::vector<Sbp> axes = sbp.axes();
  for (size_t k = 0; k < axes.size(); ++k)
    if (replicated[k]) axes[k] = Sbp::broadcast();
  return NdSbp(std::move(axes));
}

// The op's cost on the shards at mesh coordinates `at`, with the signature's layouts passed
// through `layout`.
template <class Layout>
OpCost shard_cost(const SbpCall& call, const NdSbpSignature& sig, Layout&& layout,
                  const std::vector<int64_t>& at) {
  const Placement& p = *call.placement;
  std::vector<Shape> in;
  in.reserve(call.in.size());
  for (size_t i = 0; i < call.in.size(); ++i) {
    const CallInput& x = call.in[i];
    if (!x.shape)
      in.emplace_back();
    else if (x.layout)
      in.push_back(local_shape(*x.shape, layout(sig.in[i]), p, at));
    else
      in.push_back(*x.shape);
  }
  const Shape out = local_shape((*call.out_shapes)[0], layout(sig.out[0]), p, at);
  OpCost c = call.def->cost(in, out, call.out_dtype);
  if (!call.def->shard_work) return c;
  std::vector<Shape> logical, outs;
  std::vector<std::vector<int64_t>> offsets, out_offsets;
  for (size_t i = 0; i < call.in.size(); ++i) {
    const CallInput& x = call.in[i];
    logical.push_back(x.shape ? *x.shape : Shape());
    offsets.push_back(!x.shape   ? std::vector<int64_t>()
                      : x.layout ? local_starts(*x.shape, layout(sig.in[i]), p, at)
                                 : std::vector<int64_t>(x.shape->size(), 0));
  }
  for (size_t j = 0; j < call.out_shapes->size(); ++j) {
    outs.push_back(local_shape((*call.out_shapes)[j], layout(sig.out[j]), p, at));
    out_offsets.push_back(local_starts((*call.out_shapes)[j], layout(sig.out[j]), p, at));
  }
  static const Attrs none;
  c.flops *=
      call.def->shard_work(call.attrs ? *call.attrs : none, {logical, outs, offsets, out_offsets});
  return c;
}

// The op's cost on its largest shard: mesh coordinate (0, ..., 0), as balanced splits give lower
// indices the larger pieces, or, for an op whose work grows along its tensors (shard_work:
// causal attention), the last coordinate where that does more.
template <class Layout>
OpCost origin_cost(const SbpCall& call, const NdSbpSignature& sig, Layout&& layout) {
  const Placement& p = *call.placement;
  const OpCost first = shard_cost(call, sig, layout, std::vector<int64_t>(p.mesh().size(), 0));
  if (!call.def->shard_work) return first;
  std::vector<int64_t> last = p.mesh();
  for (int64_t& d : last) --d;
  const OpCost other = shard_cost(call, sig, layout, last);
  return other.flops > first.flops ? other : first;
}

// The roofline time of the call's compute on the largest shard, and what the choice ranks by.
//
// A split the call would introduce, on a mesh axis where every input is broadcast, is ranked
// without its compute saving: whether cutting replicated data pays depends on whether the
// consumers want the pieces or gather them again (a data-parallel optimizer's updates would be
// sharded only to be gathered for the in-place write), which one op cannot see; the planner
// (graph mode) does. Between such signatures the tie-breaks decide, as for free views.
void price_compute(const SbpCall& call, const NdSbpSignature& sig, const ClusterSpec& cluster,
                   SignatureChoice& c) {
  if (!call.def->cost || call.out_shapes->empty()) return;
  const OpCost cost = origin_cost(call, sig, [](const NdSbp& s) { return s; });
  c.flops = cost.flops;
  c.compute_seconds = c.ranked_compute_seconds = cluster.compute(cost, call.out_dtype);
  std::vector<bool> replicated(call.placement->mesh().size());
  bool any = false;
  for (size_t k = 0; k < replicated.size(); ++k) {
    replicated[k] = std::all_of(call.in.begin(), call.in.end(), [&](const CallInput& i) {
      return !i.layout || (*i.layout)[k].is_broadcast();
    });
    any = any || replicated[k];
  }
  if (!any) return;
  const OpCost whole =
      origin_cost(call, sig, [&](const NdSbp& s) { return without_introduced(s, replicated); });
  c.ranked_compute_seconds = cluster.compute(whole, call.out_dtype);
}

// The latency of streaming input x to layout `to` (stream_probe's gather).
double stream_latency(const OpDef& def, const CallInput& x, const NdSbp& to,
                      const TransitionCost& transition) {
  return transition(stream_probe(def, *x.shape), x.dtype, *x.layout, to).seconds;
}

}  // namespace

Shape stream_probe(const OpDef& def, const Shape& shape) {
  Shape probe(shape.size(), 1);
  probe[size_t(def.streamed_dim)] = shape[size_t(def.streamed_dim)];
  return probe;
}

SbpQuery sbp_query(const SbpCall& call) {
  SbpQuery q;
  for (const CallInput& i : call.in) q.in.push_back(i.shape ? *i.shape : Shape{});
  q.out = *call.out_shapes;
  q.typed = call.attrs;
  q.parallel_num = call.placement->size();
  return q;
}

std::vector<NdSbpSignature> candidate_signatures(const SbpCall& call) {
  const SbpQuery q = sbp_query(call);
  std::vector<SbpSignature> raw;
  if (call.def->sbp) raw = call.def->sbp->signatures(q);
  raw.push_back(all_broadcast_signature(call.in.size(), call.out_shapes->size()));
  std::vector<std::vector<SbpSignature>> per_axis;
  for (size_t k = 0; k < call.placement->mesh().size(); ++k) {
    std::vector<SbpSignature>& axis = per_axis.emplace_back();
    for (SbpSignature sig : raw) {
      bool ok = true;
      for (size_t i = 0; i < call.in.size() && ok; ++i) {
        const CallInput& x = call.in[i];
        if (!x.shape)
          sig.in[i] = Sbp::broadcast();
        else if (!x.layout)
          ok = sig.in[i].is_broadcast();
      }
      if (ok && call.inplace) {
        const Sbp& self = (*call.in[0].layout)[k];
        ok = sig.in[0] == self && sig.out[0] == self;
      }
      if (ok && std::find(axis.begin(), axis.end(), sig) == axis.end())
        axis.push_back(std::move(sig));
    }
    if (axis.empty()) {
      std::string inputs;
      for (const CallInput& i : call.in)
        inputs += str_cat(inputs.empty() ? "" : ", ", i.shape ? shape_str(*i.shape) : "none",
                          i.layout  ? " " + i.layout->str()
                          : i.shape ? " local"
                                    : "");
      fail(call.def->name.c_str(), "no signature keeps the in-place output's layout ",
           call.in[0].layout->str(), " (inputs ", inputs,
           "); reshard the written tensor, e.g. to broadcast, first");
    }
  }
  return combine_signatures(per_axis);
}

double compute_seconds(const SbpCall& call, const NdSbpSignature& sig, const ClusterSpec& cluster) {
  if (!call.def->cost || call.out_shapes->empty()) return 0;
  const OpCost cost = origin_cost(call, sig, [](const NdSbp& s) { return s; });
  return cluster.compute(cost, call.out_dtype);
}

SignatureChoice select_signature(const SbpCall& call, const ClusterSpec& cluster,
                                 const TransitionCost& transition) {
  const std::vector<Shape>& outs = *call.out_shapes;
  Ranked best;
  bool found = false;
  for (NdSbpSignature& sig : candidate_signatures(call)) {
    Ranked r;
    double streamed = 0;  // the gathers a streaming compute makes as it goes
    double hops = 0;      // their exchanges' latency, which no compute hides
    for (size_t i = 0; i < call.in.size(); ++i) {
      const CallInput& x = call.in[i];
      if (!x.layout || *x.layout == sig.in[i]) continue;
      const Transition t = transition(*x.shape, x.dtype, *x.layout, sig.in[i]);
      if (!streamed_axes(*call.def, i, *x.layout, sig.in[i]).empty()) {
        streamed += t.seconds;
        hops = std::max(hops, stream_latency(*call.def, x, sig.in[i], transition));
        continue;
      }
      r.choice.boxing_seconds += t.seconds;
      r.comm_steps += t.steps;
    }
    for (size_t j = 0; j < outs.size(); ++j) {
      if (!call.owes_nothing || !(*call.owes_nothing)[j])
        r.choice.owed_seconds += owed_seconds(call, outs[j], sig.out[j], transition);
      r.out_elems += numel_of(outs[j]) * local_fraction(sig.out[j], *call.placement);
      r.partial_outs += sig.out[j].any_partial();
    }
    r.choice.sig = std::move(sig);
    price_compute(call, r.choice.sig, cluster, r.choice);
    // Its blocks pass while it computes on those it has (ring attention): what outlasts compute,
    // and the exchanges' latency.
    r.choice.boxing_seconds += std::max(0.0, streamed - r.choice.compute_seconds) + hops;
    if (!found || better(r, best)) best = std::move(r);
    found = true;
  }
  OFL_CHECK(found, call.def->name, ": no candidate signature");
  return std::move(best.choice);
}

}  // namespace ofl::internal
