// The bucketed collectives of many tensors at once: the gradients' reductions (reduce_fused: one
// all_reduce or reduce_scatter a bucket) and the parameters' gathers (gather_fused), which DDP,
// ZeRO and the graph executor's gradient buckets use. Laid out by boxes as boxing/reshard.cpp's
// single plans are (boxing/boxes.h).
#include "boxing/fused_collectives.h"

#include <string>

#include "boxing/boxes.h"
#include "boxing/layout.h"
#include "boxing/ranks.h"
#include "core/autograd/grad_mode.h"
#include "core/error.h"
#include "core/primitives.h"
#include "sbp/global_info.h"

namespace ofl::internal {

namespace {

using namespace boxes;

// reduce_fused on meta tensors: the same buckets, priced (one collective each on the sub-groups
// of `axes`, the largest shards' bytes), with nothing run.
std::vector<Tensor> reduce_fused_meta(const std::vector<GlobalTensor>& xs,
                                      const std::vector<NdSbp>& targets,
                                      const std::vector<int64_t>& axes, BoxingContext& ctx,
                                      int64_t bucket_bytes) {
  std::vector<Tensor> out;
  bool scatter = false;
  for (size_t i = 0; i < xs.size(); ++i) {
    out.push_back(
        meta_global(xs[i].shape, xs[i].local.dtype(), xs[i].placement, targets[i], ctx).local);
    for (int64_t a : axes) scatter |= targets[i][size_t(a)].is_split();
  }
  if (!ctx.costs) return out;
  const Placement& p = xs[0].placement;
  const std::vector<int> group = mesh_groups(p, axes).front();
  const ClusterSpec cluster =
      ctx.cache ? ctx.cache->cluster() : ClusterSpec::default_for(ctx.world->size());
  const int64_t item = int64_t(itemsize(xs[0].local.dtype()));
  for (size_t begin = 0, end = 0; begin < xs.size(); begin = end) {
    int64_t bytes = 0;
    std::string what;
    for (end = begin; end < xs.size(); ++end) {
      const int64_t k = item * max_local_numel(xs[end].shape, xs[end].nd_sbp, p);
      if (end > begin && bytes + k > bucket_bytes) break;
      bytes += k;
      what += str_cat(end > begin ? ", " : "", shape_str(xs[end].shape), " ", xs[end].nd_sbp.str(),
                      " -> ", targets[end].str());
    }
    BoxingStep step;
    step.kind = scatter ? StepKind::kReduceScatter : StepKind::kAllReduce;
    step.mesh_axes = axes;
    step.group_size = int64_t(group.size());
    step.from = xs[begin].nd_sbp;
    step.to = targets[begin];
    step.bytes = bytes;
    step.seconds = scatter ? cluster.reduce_scatter(group, double(bytes))
                           : cluster.all_reduce(group, double(bytes));
    BoxingPlan plan;
    plan.steps.push_back(step);
    plan.seconds = step.seconds;
    PredictedCost c{.op = "reduce_fused", .signature = what};
    c.add(plan);
    ctx.costs->push_back(std::move(c));
  }
  return out;
}

// A fused collective with nothing to send: on a placement this rank is outside of (nothing is
// kept), or in a group of one member, a one-device pipeline stage (its shard is the whole in
// every layout: copied as it is).
std::vector<Tensor> without_communicating(const std::vector<GlobalTensor>& xs, bool outside) {
  std::vector<Tensor> out;
  for (const GlobalTensor& x : xs)
    out.push_back(outside ? outside_shard(x.shape, x.local.dtype(), x.local.device())
                          : contiguous_copy(x.local));
  return out;
}

}  // namespace

std::vector<Tensor> reduce_fused(const std::vector<GlobalTensor>& xs,
                                 const std::vector<NdSbp>& targets,
                                 const std::vector<int64_t>& axes, BoxingContext& ctx,
                                 int64_t bucket_bytes) {
  autograd::NoGradGuard no_grad;
  comm::PlannedCollectives planned;
  std::vector<Tensor> out(xs.size());
  if (xs.empty()) return out;
  if (xs[0].local.device().is_meta())
    return reduce_fused_meta(xs, targets, axes, ctx, bucket_bytes);
  const Placement& p = xs[0].placement;
  if (!p.contains(global_rank(ctx))) return without_communicating(xs, true);
  const SubGroup g = sub_group(p, axes, global_rank(ctx));
  if (g.members.size() == 1) return without_communicating(xs, false);
  auto comm = comm_for(ctx, g.members);
  const DType dtype = xs[0].local.dtype();
  const int64_t item = int64_t(itemsize(dtype));
  // Each tensor's box on this rank, and the box each member keeps of it.
  std::vector<Ranges> have;
  std::vector<std::vector<Ranges>> keep;
  bool scatter = false;
  for (size_t i = 0; i < xs.size(); ++i) {
    OFL_CHECK(xs[i].local.dtype() == dtype && xs[i].placement == p, "reduce_fused: mixed tensors");
    have.push_back(local_ranges(xs[i].shape, xs[i].nd_sbp, p, *p.coords_of(global_rank(ctx))));
    keep.emplace_back();
    for (int m : g.members)
      keep[i].push_back(local_ranges(xs[i].shape, targets[i], p, *p.coords_of(m)));
    for (const Ranges& b : keep[i]) scatter |= b != have[i];
  }
  for (size_t begin = 0, end = 0; begin < xs.size(); begin = end) {
    int64_t n = 0;
    for (end = begin; end < xs.size(); ++end) {
      const int64_t k = xs[end].local.numel();
      if (end > begin && (n + k) * item > bucket_bytes) break;
      n += k;
    }
    // Member-major: every tensor's block for member 0, then for member 1, ...
    auto box_of = [&](size_t i, size_t m) -> const Ranges& {
      return scatter ? keep[i][m] : have[i];
    };
    std::vector<int64_t> counts(scatter ? g.members.size() : 1, 0);
    for (size_t m = 0; m < counts.size(); ++m)
      for (size_t i = begin; i < end; ++i) counts[m] += numel_of_ranges(box_of(i, m));
    int64_t total = 0;
    for (int64_t c : counts) total += c;
    Tensor buf = Tensor::empty({total}, dtype, xs[begin].local.device());
    int64_t off = 0;
    for (size_t m = 0; m < counts.size(); ++m)
      for (size_t i = begin; i < end; ++i) {
        const Ranges& box = box_of(i, m);
        const int64_t k = numel_of_ranges(box);
        if (k == 0) continue;
        Tensor piece = reshape_view(narrow_view(buf, 0, off, k), shape_of(box));
        copy_into(piece, sub_box(xs[i].local, have[i], box));
        off += k;
      }
    const char* kind = scatter ? "reduce_scatter(sum) " : "all_reduce(sum) ";
    if (ctx.log != nullptr)
      ctx.log->push_back(str_cat(kind, comm->name(), " ", total * item, " B"));
    Tensor mine = buf;
    if (scatter) {
      mine = Tensor::empty({counts[size_t(g.index)]}, dtype, buf.device());
      comm->reduce_scatter_v(buf, mine, counts, comm::ReduceOp::kSum);
    } else {
      comm->all_reduce(buf, comm::ReduceOp::kSum);
    }
    off = 0;
    for (size_t i = begin; i < end; ++i) {
      const Ranges& box = box_of(i, size_t(g.index));
      const int64_t k = numel_of_ranges(box);
      out[i] = reshape_view(narrow_view(mine, 0, off, k), shape_of(box));
      off += k;
    }
  }
  return out;
}

std::vector<Tensor> gather_fused(const std::vector<GlobalTensor>& xs,
                                 const std::vector<NdSbp>& targets,
                                 const std::vector<int64_t>& axes, BoxingContext& ctx) {
  autograd::NoGradGuard no_grad;
  comm::PlannedCollectives planned;
  std::vector<Tensor> out(xs.size());
  if (xs.empty()) return out;
  const Placement& p = xs[0].placement;
  const int me = global_rank(ctx);
  if (xs[0].local.device().is_meta()) {
    for (size_t i = 0; i < xs.size(); ++i)
      out[i] = meta_global(xs[i].shape, xs[i].local.dtype(), p, targets[i], ctx).local;
    return out;
  }
  if (!p.contains(me)) return without_communicating(xs, true);
  const std::vector<int64_t> coords = *p.coords_of(me);
  const SubGroup g = sub_group(p, axes, me);
  if (g.members.size() == 1) return without_communicating(xs, false);
  const DType dtype = xs[0].local.dtype();
  // Each tensor's box on every member, and the box this rank keeps: the union of the members'.
  std::vector<std::vector<Ranges>> have(xs.size());
  std::vector<Ranges> keep;
  std::vector<int64_t> counts(g.members.size(), 0);
  for (size_t i = 0; i < xs.size(); ++i) {
    OFL_CHECK(xs[i].local.dtype() == dtype && xs[i].placement == p, "gather_fused: mixed tensors");
    for (size_t m = 0; m < g.members.size(); ++m) {
      have[i].push_back(local_ranges(xs[i].shape, xs[i].nd_sbp, p, *p.coords_of(g.members[m])));
      counts[m] += numel_of_ranges(have[i].back());
    }
    keep.push_back(local_ranges(xs[i].shape, targets[i], p, coords));
  }
  Tensor mine = Tensor::empty({counts[size_t(g.index)]}, dtype, xs[0].local.device());
  int64_t off = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const int64_t k = xs[i].local.numel();
    if (k == 0) continue;
    Tensor piece = reshape_view(narrow_view(mine, 0, off, k), xs[i].local.shape());
    copy_into(piece, xs[i].local);
    off += k;
  }
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  Tensor all = Tensor::empty({total}, dtype, mine.device());
  auto comm = comm_for(ctx, g.members);
  if (ctx.log != nullptr)
    ctx.log->push_back(
        str_cat("all_gather ", comm->name(), " ", total * int64_t(itemsize(dtype)), " B"));
  comm->all_gather_v(mine, all, counts);
  for (size_t i = 0; i < xs.size(); ++i)
    out[i] = Tensor::empty(shape_of(keep[i]), dtype, all.device());
  off = 0;
  for (size_t m = 0; m < g.members.size(); ++m)
    for (size_t i = 0; i < xs.size(); ++i) {
      const int64_t k = numel_of_ranges(have[i][m]);
      if (k == 0) continue;
      put(out[i], keep[i], reshape_view(narrow_view(all, 0, off, k), shape_of(have[i][m])),
          have[i][m]);
      off += k;
    }
  return out;
}

}  // namespace ofl::internal
