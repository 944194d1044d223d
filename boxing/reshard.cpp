// Executing boxing plans: each step of a plan runs on this rank's shard with the collective of
// its per-mesh-axis sub-group. Every collective here is laid out by boxes (one [begin, end) per
// tensor axis) that each member computes from local_ranges, so uneven and empty shards and merged
// mesh axes need no special cases: a buffer is the members' boxes packed back to back.
#include "boxing/reshard.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <type_traits>

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

// Whether the boxes, packed back to back, are exactly the row-major layout of `have` (each box
// a contiguous run of it, in order, covering it): then packing and unpacking are no-ops.
bool packs_in_place(const Ranges& have, const std::vector<Ranges>& boxes) {
  const Shape extent = shape_of(have);
  const Shape strides = contiguous_strides(extent);
  int64_t next = 0;
  for (const Ranges& b : boxes) {
    const int64_t n = numel_of_ranges(b);
    if (n == 0) continue;
    size_t a = 0;
    while (a < b.size() && b[a] == have[a]) ++a;
    for (size_t i = 0; i < a; ++i)
      if (extent[i] != 1) return false;
    for (size_t i = a + 1; i < b.size(); ++i)
      if (b[i] != have[i]) return false;
    int64_t start = 0;
    for (size_t i = 0; i < b.size(); ++i) start += (b[i].first - have[i].first) * strides[i];
    if (start != next) return false;
    next += n;
  }
  return next == numel_of(extent);
}

// The boxes of `in` (holding `have`) packed back to back into one 1-d contiguous buffer.
Tensor pack(const Tensor& in, const Ranges& have, const std::vector<Ranges>& boxes) {
  if (in.is_contiguous() && packs_in_place(have, boxes)) return reshape_view(in, {in.numel()});
  int64_t total = 0;
  for (const Ranges& b : boxes) total += numel_of_ranges(b);
  Tensor buf = Tensor::empty({total}, in.dtype(), in.device());
  int64_t off = 0;
  for (const Ranges& b : boxes) {
    const int64_t n = numel_of_ranges(b);
    if (n == 0) continue;
    Tensor dst = reshape_view(narrow_view(buf, 0, off, n), shape_of(b));
    copy_into(dst, sub_box(in, have, b));
    off += n;
  }
  return buf;
}

// The inverse of pack: the buffer's boxes copied into out (holding `have`).
void unpack(Tensor& out, const Ranges& have, const Tensor& buf, const std::vector<Ranges>& boxes) {
  int64_t off = 0;
  for (const Ranges& b : boxes) {
    const int64_t n = numel_of_ranges(b);
    if (n == 0) continue;
    put(out, have, reshape_view(narrow_view(buf, 0, off, n), shape_of(b)), b);
    off += n;
  }
}

std::vector<int64_t> counts_of(const std::vector<Ranges>& boxes) {
  std::vector<int64_t> c;
  for (const Ranges& b : boxes) c.push_back(numel_of_ranges(b));
  return c;
}

comm::ReduceOp reduce_op(PartialOp op) {
  switch (op) {
    case PartialOp::kSum:
      return comm::ReduceOp::kSum;
    case PartialOp::kMax:
      return comm::ReduceOp::kMax;
    case PartialOp::kMin:
      return comm::ReduceOp::kMin;
  }
  return comm::ReduceOp::kSum;
}

// A tensor filled with op's identity: 0 for sum, the lowest value for max (-inf for floating
// types), the highest for min (+inf).
Tensor identity_full(const Shape& shape, DType dtype, Device device, PartialOp op) {
  if (op == PartialOp::kSum) return filled(shape, dtype, device, 0);
  Tensor t = Tensor::empty(shape, dtype, Device{});
  dispatch_all(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    T v;
    if constexpr (std::is_floating_point_v<M>)
      v = static_cast<T>(op == PartialOp::kMax ? -std::numeric_limits<M>::infinity()
                                               : std::numeric_limits<M>::infinity());
    else
      v = op == PartialOp::kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = v;
  });
  if (device.type == DeviceType::kCPU) return t;
  Tensor d = Tensor::empty(shape, dtype, device);
  copy_into(d, t);
  return d;
}

void log_step(BoxingContext& ctx, const BoxingStep& step, const std::string& group, int64_t bytes) {
  if (ctx.log == nullptr) return;
  std::string line = str_cat(step_kind_name(step.kind));
  if (step.kind == StepKind::kAllReduce || step.kind == StepKind::kReduceScatter)
    line += str_cat("(", partial_op_name(step.op), ")");
  ctx.log->push_back(str_cat(line, " ", group, " ", bytes, " B"));
}

// One same-placement step on this rank (a member of p) whose shard `in` is laid out by step.from.
Tensor run_step(const BoxingStep& step, const Tensor& in, const Shape& shape, const Placement& p,
                BoxingContext& ctx) {
  const int me = global_rank(ctx);
  const std::vector<int64_t> coords = *p.coords_of(me);
  const Ranges before = local_ranges(shape, step.from, p, coords);
  const Ranges after = local_ranges(shape, step.to, p, coords);
  const int64_t item = int64_t(itemsize(in.dtype()));
  switch (step.kind) {
    case StepKind::kLocalSlice:
      return contiguous_local(sub_box(in, before, after));
    case StepKind::kLocalZeroFill: {
      OFL_CHECK(before == after);
      const SubGroup g = sub_group(p, step.mesh_axes, me);
      if (step.op == PartialOp::kSum && g.index != 0)
        return filled(in.shape(), in.dtype(), in.device(), 0);
      return in;
    }
    case StepKind::kLocalPad: {
      Tensor out = identity_full(shape_of(after), in.dtype(), in.device(), step.op);
      put(out, after, in, before);
      return out;
    }
    case StepKind::kSendRecv:
      break;
    default: {
      const SubGroup g = sub_group(p, step.mesh_axes, me);
      if (g.members.size() == 1) {  // one shard is the whole (a one-device pipeline stage)
        OFL_CHECK(before == after);
        return in;
      }
      std::vector<Ranges> from_boxes, to_boxes;
      for (int m : g.members) {
        const auto c = *p.coords_of(m);
        from_boxes.push_back(local_ranges(shape, step.from, p, c));
        to_boxes.push_back(local_ranges(shape, step.to, p, c));
      }
      auto comm = comm_for(ctx, g.members);
      Tensor src = contiguous_local(in);
      if (step.kind == StepKind::kAllReduce) {
        OFL_CHECK(before == after);
        if (in.device().type != DeviceType::kCPU) {  // NCCL's all_reduce beats its two halves
          Tensor out = contiguous_copy(src);
          log_step(ctx, step, comm->name(), out.numel() * item);
          comm->all_reduce(out, reduce_op(step.op));
          return out;
        }
        // Its two halves, out of place: each member reduces its block of the input into the
        // output, then the blocks are gathered there. The input is left as it was without
        // copying it first (Gloo's all_reduce is in place): 1.1x to 1.3x faster from 1 to 64 MB
        // on 2 and 4 ranks than a copy and all_reduce.
        Tensor out = Tensor::empty(src.shape(), in.dtype(), in.device());
        const int64_t n = src.numel(), members = int64_t(g.members.size());
        std::vector<int64_t> counts;
        for (int64_t k = 0; k < members; ++k) {
          auto [start, stop] = split_range(n, members, k);
          counts.push_back(stop - start);
        }
        Tensor flat = reshape_view(out, {n});
        auto [start, stop] = split_range(n, members, g.index);
        Tensor mine = narrow_view(flat, 0, start, stop - start);
        log_step(ctx, step, comm->name(), n * item);
        comm->reduce_scatter_v(reshape_view(src, {n}), mine, counts, reduce_op(step.op));
        comm->all_gather_v(mine, flat, counts);
        return out;
      }
      auto unpacked = [&](const Tensor& buf, const std::vector<Ranges>& boxes) {
        if (packs_in_place(after, boxes)) return reshape_view(buf, shape_of(after));
        Tensor out = Tensor::empty(shape_of(after), in.dtype(), in.device());
        unpack(out, after, buf, boxes);
        return out;
      };
      if (step.kind == StepKind::kAllGather) {
        // Member k's shard is its from-box; together they tile this rank's to-box.
        Tensor buf = Tensor::empty({numel_of_ranges(after)}, in.dtype(), in.device());
        log_step(ctx, step, comm->name(), buf.numel() * item);
        comm->all_gather_v(reshape_view(src, {src.numel()}), buf, counts_of(from_boxes));
        return unpacked(buf, from_boxes);
      }
      if (step.kind == StepKind::kReduceScatter) {
        // Block k is the part of this rank's partial that member k keeps (its to-box).
        Tensor send = pack(src, before, to_boxes);
        Tensor recv = Tensor::empty({numel_of_ranges(after)}, in.dtype(), in.device());
        log_step(ctx, step, comm->name(), send.numel() * item);
        comm->reduce_scatter_v(send, recv, counts_of(to_boxes), reduce_op(step.op));
        return reshape_view(recv, shape_of(after));
      }
      if (step.kind == StepKind::kAllToAll) {
        std::vector<Ranges> send_boxes, recv_boxes;
        for (size_t k = 0; k < g.members.size(); ++k) {
          send_boxes.push_back(intersect(before, to_boxes[k]));
          recv_boxes.push_back(intersect(from_boxes[k], after));
        }
        auto send_counts = counts_of(send_boxes);
        auto recv_counts = counts_of(recv_boxes);
        log_step(ctx, step, comm->name(),
                 std::accumulate(send_counts.begin(), send_counts.end(), int64_t{0}) * item);
        // Each box packed as it is sent (the backend sends one while packing the next), or
        // sent from the shard itself where the boxes lie in it back to back.
        const bool in_place = src.is_contiguous() && packs_in_place(before, send_boxes);
        const Tensor flat = reshape_view(src, {src.numel()});
        std::vector<int64_t> starts(send_counts.size(), 0);
        for (size_t k = 1; k < starts.size(); ++k) starts[k] = starts[k - 1] + send_counts[k - 1];
        // Where the received boxes do not lie back to back in the output, they are copied into
        // it: this rank's own box then goes there straight from the shard, not through the
        // buffer (one copy instead of two).
        std::optional<Tensor> out;
        if (!packs_in_place(after, recv_boxes)) {
          out = Tensor::empty(shape_of(after), in.dtype(), in.device());
          put(*out, after, sub_box(src, before, send_boxes[g.index]), recv_boxes[g.index]);
          send_counts[g.index] = recv_counts[g.index] = 0;
          recv_boxes[g.index] = Ranges(after.size(), {0, 0});
        }
        Tensor recv =
            Tensor::empty({std::accumulate(recv_counts.begin(), recv_counts.end(), int64_t{0})},
                          in.dtype(), in.device());
        comm->all_to_all_v_packed(
            [&](int k, const Tensor& into) {
              if (in_place) return narrow_view(flat, 0, starts[k], send_counts[k]);
              copy_into(reshape_view(into, shape_of(send_boxes[k])),
                        sub_box(src, before, send_boxes[k]));
              return into;
            },
            send_counts, recv, recv_counts);
        if (out) {
          unpack(*out, after, recv, recv_boxes);
          return *out;
        }
        return unpacked(recv, recv_boxes);
      }
    }
  }
  fail("reshard", "cannot run step ", step.str(), " on ", p.str());
}

// The cross-placement step: each target rank receives exactly the slices of its box from the
// source ranks, choosing replicas as send_recv_step (boxing/cross_placement.cpp) does. All ranks
// post their sends and receives in global (src, dst) order, so a synchronous send never waits on
// a peer that is itself blocked on a later message.
Tensor run_send_recv(const BoxingStep& step, const Tensor& in, const Shape& shape,
                     const Placement& from_p, const Placement& to_p, DType dtype, Device device,
                     BoxingContext& ctx) {
  const int me = global_rank(ctx);
  std::map<Ranges, std::vector<int>> pieces;
  for (int64_t i = 0; i < from_p.size(); ++i)
    pieces[local_ranges(shape, step.from, from_p, unravel_index(from_p.mesh(), i))].push_back(
        from_p.ranks()[size_t(i)]);
  std::optional<Ranges> have, want;
  if (auto c = from_p.coords_of(me)) have = local_ranges(shape, step.from, from_p, *c);
  if (auto c = to_p.coords_of(me)) want = local_ranges(shape, step.to, to_p, *c);
  Tensor out =
      want ? Tensor::empty(shape_of(*want), dtype, device) : outside_shard(shape, dtype, device);
  Tensor src = have ? contiguous_local(in) : in;
  std::map<std::pair<int, int>, std::vector<Ranges>> messages;
  for (int64_t t = 0; t < to_p.size(); ++t) {
    const int dst = to_p.ranks()[size_t(t)];
    const Ranges w = local_ranges(shape, step.to, to_p, unravel_index(to_p.mesh(), t));
    for (const auto& [h, replicas] : pieces) {
      const Ranges box = intersect(w, h);
      if (numel_of_ranges(box) == 0) continue;
      const bool local = std::find(replicas.begin(), replicas.end(), dst) != replicas.end();
      const int from = local ? dst : replicas[size_t(t) % replicas.size()];
      if (from == dst) {
        if (dst == me) put(out, *want, sub_box(src, *have, box), box);
        continue;
      }
      messages[{from, dst}].push_back(box);
    }
  }
  int64_t bytes = 0;
  const int64_t item = int64_t(itemsize(dtype));
  for (const auto& [pair, boxes] : messages) {
    const auto [from, dst] = pair;
    if (from == me) {
      Tensor buf = pack(src, *have, boxes);
      bytes += buf.numel() * item;
      ctx.world->send(buf, world_index(ctx, dst));
    } else if (dst == me) {
      int64_t n = 0;
      for (const Ranges& b : boxes) n += numel_of_ranges(b);
      Tensor buf = Tensor::empty({n}, dtype, device);
      ctx.world->recv(buf, world_index(ctx, from));
      bytes += n * item;
      unpack(out, *want, buf, boxes);
    }
  }
  if (have || want) log_step(ctx, step, ctx.world->name(), bytes);
  return out;
}

}  // namespace

Tensor as_tensor(const GlobalTensor& g, std::shared_ptr<BoxingContext> ctx) {
  Tensor t = g.local.alias();
  t.impl()->global =
      std::make_shared<GlobalInfo>(GlobalInfo{g.shape, g.placement, g.nd_sbp, std::move(ctx)});
  return t;
}

GlobalTensor as_global(const Tensor& t, const char* op) {
  if (!t.is_global()) fail(op, "expects a global tensor, got a local ", t.str());
  const GlobalInfo& info = *t.impl()->global;
  return {t.alias(), info.shape, info.placement, info.nd_sbp};
}

void check_placement_in_world(const Placement& placement, const comm::Communicator& world,
                              const char* op) {
  const auto& members = world.ranks();
  for (int r : placement.ranks())
    if (std::find(members.begin(), members.end(), r) == members.end())
      fail(op, "placement ", placement.str(), " names rank ", r, ", which is not in the world of ",
           members.size(), " ranks (", world.name(),
           "); only meta tensors (device=\"meta\") may sit on a placement larger than the world");
}

GlobalTensor meta_global(const Shape& shape, DType dtype, const Placement& placement,
                         const NdSbp& nd_sbp, const BoxingContext& ctx) {
  validate_sbp("to_global", shape, nd_sbp, placement);
  const auto coords = placement.coords_of(global_rank(ctx));
  const Device meta{DeviceType::kMeta};
  return {coords ? Tensor::empty(local_shape(shape, nd_sbp, placement, *coords), dtype, meta)
                 : outside_shard(shape, dtype, meta),
          shape, placement, nd_sbp};
}

Tensor outside_shard(const Shape& shape, DType dtype, Device device) {
  return Tensor::empty(Shape(shape.size(), 0), dtype, device);
}

GlobalTensor reshard(const GlobalTensor& x, const Placement& placement, const NdSbp& nd_sbp,
                     BoxingContext& ctx, PredictedCost* into) {
  autograd::NoGradGuard no_grad;
  comm::PlannedCollectives planned;  // derived from metadata every rank agrees on
  const bool meta = x.local.device().is_meta();
  if (!meta && !(placement == x.placement))
    check_placement_in_world(placement, *ctx.world, "to_global");
  std::shared_ptr<const BoxingPlan> plan;
  const DType dtype = x.local.dtype();
  if (ctx.cache) {
    plan = ctx.cache->get(x.shape, dtype, x.placement, x.nd_sbp, placement, nd_sbp);
  } else {
    plan = std::make_shared<const BoxingPlan>(
        plan_boxing(x.shape, dtype, x.placement, x.nd_sbp, placement, nd_sbp,
                    ClusterSpec::default_for(ctx.world->size())));
  }
  if (into) {
    into->add(*plan);
  } else if (ctx.costs && !plan->empty()) {
    PredictedCost c{.op = "reshard", .signature = x.nd_sbp.str() + " -> " + nd_sbp.str()};
    if (!(placement == x.placement))
      c.signature = str_cat(x.nd_sbp.str(), " on ", x.placement.str(), " -> ", nd_sbp.str(), " on ",
                            placement.str());
    c.add(*plan);
    ctx.costs->push_back(std::move(c));
  }
  if (meta) return meta_global(x.shape, dtype, placement, nd_sbp, ctx);
  const int me = global_rank(ctx);
  const Device device = x.local.device();
  Tensor cur = x.local;
  Placement cur_p = x.placement;
  for (const BoxingStep& step : plan->steps) {
    if (step.kind == StepKind::kSendRecv) {
      cur = run_send_recv(step, cur, x.shape, cur_p, placement, dtype, device, ctx);
      cur_p = placement;
      continue;
    }
    if (cur_p.contains(me)) cur = run_step(step, cur, x.shape, cur_p, ctx);
  }
  return GlobalTensor{
      placement.contains(me) ? contiguous_local(cur) : outside_shard(x.shape, dtype, device),
      x.shape, placement, nd_sbp};
}

Tensor to_full(const GlobalTensor& x, BoxingContext& ctx) {
  if (x.local.device().is_meta()) return Tensor::empty(x.shape, x.local.dtype(), x.local.device());
  const Placement all = Placement::all(x.placement.device_type(), ctx.world->size());
  return reshard(x, all, NdSbp({Sbp::broadcast()}), ctx).local;
}

Tensor shard_of(const Tensor& full, const Placement& placement, const NdSbp& nd_sbp,
                const std::vector<int64_t>& coords) {
  autograd::NoGradGuard no_grad;
  const Ranges r = local_ranges(full.shape(), nd_sbp, placement, coords);
  Tensor t = contiguous_copy(sub_box(full, full_ranges(full.shape()), r));
  for (size_t k = 0; k < nd_sbp.size(); ++k)
    if (nd_sbp[k].is_partial() && nd_sbp[k].op() == PartialOp::kSum && coords[k] != 0) {
      fill_into(t, 0);
      break;
    }
  return t;
}

}  // namespace ofl::internal
