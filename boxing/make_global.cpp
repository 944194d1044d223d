// make_global: a global tensor from each rank's local tensor, its global shape derived from the
// ranks' shards (their metadata exchanged over the world: dtype, local shape, placement, SBP,
// checked to agree), and with sync_broadcast, broadcast axes made equal by sending the first
// member's shard along each.
#include <optional>

#include "boxing/ranks.h"
#include "boxing/reshard.h"
#include "core/autograd/grad_mode.h"
#include "core/error.h"
#include "core/primitives.h"

namespace ofl::internal {

namespace {

// The metadata each rank sends.
struct Meta {
  DType dtype = DType::kFloat32;
  Shape local;
  std::optional<Placement> placement;
  NdSbp nd_sbp;
};

std::vector<int64_t> encode(const Tensor& local, const Placement& p, const NdSbp& nd) {
  std::vector<int64_t> v = {int64_t(local.dtype()), local.dim()};
  v.insert(v.end(), local.shape().begin(), local.shape().end());
  v.push_back(int64_t(p.device_type()));
  v.push_back(p.ndim());
  v.insert(v.end(), p.mesh().begin(), p.mesh().end());
  v.push_back(p.size());
  v.insert(v.end(), p.ranks().begin(), p.ranks().end());
  v.push_back(int64_t(nd.size()));
  for (const Sbp& s : nd.axes()) {
    v.push_back(int64_t(s.kind()));
    v.push_back(s.is_split() ? s.axis() : 0);
    v.push_back(s.is_partial() ? int64_t(s.op()) : 0);
  }
  return v;
}

Meta decode(const int64_t* p, int64_t n) {
  int64_t i = 0;
  auto next = [&]() {
    OFL_CHECK(i < n, "truncated metadata");
    return p[i++];
  };
  Meta m;
  m.dtype = DType(next());
  m.local.resize(size_t(next()));
  for (auto& d : m.local) d = next();
  const auto type = DeviceType(next());
  Shape mesh(static_cast<size_t>(next()));
  for (auto& d : mesh) d = next();
  std::vector<int> ranks(static_cast<size_t>(next()));
  for (auto& r : ranks) r = int(next());
  m.placement.emplace(type, ranks, mesh);
  std::vector<Sbp> axes(size_t(next()), Sbp::broadcast());
  for (auto& s : axes) {
    const auto kind = Sbp::Kind(next());
    const int64_t axis = next(), op = next();
    s = kind == Sbp::Kind::kSplit     ? Sbp::split(axis)
        : kind == Sbp::Kind::kPartial ? Sbp::partial(PartialOp(op))
                                      : Sbp::broadcast();
  }
  m.nd_sbp = NdSbp(axes);
  return m;
}

// The logical shape rank r's metadata implies: split axes add up the shards of the ranks that
// differ only along the mesh axes splitting them; other axes are the shard's own extent (taken
// from the placement's first rank for ranks outside it).
std::optional<Shape> implied_shape(const std::vector<Meta>& metas, int r) {
  const Meta& m = metas[size_t(r)];
  const Placement& p = *m.placement;
  if (m.nd_sbp.size() != size_t(p.ndim())) return std::nullopt;
  for (int q : p.ranks())
    if (q < 0 || q >= int(metas.size())) return std::nullopt;
  const Shape base = p.contains(r) ? m.local : metas[size_t(p.ranks()[0])].local;
  Shape shape = base;
  for (size_t d = 0; d < shape.size(); ++d) {
    std::vector<bool> splits(size_t(p.ndim()), false);
    bool split = false;
    for (size_t k = 0; k < m.nd_sbp.size(); ++k)
      if (m.nd_sbp[k].is_split() && m.nd_sbp[k].axis() == int64_t(d)) splits[k] = split = true;
    if (!split) continue;
    int64_t total = 0;
    for (int64_t i = 0; i < p.size(); ++i) {
      const auto c = unravel_index(p.mesh(), i);
      bool counted = true;
      for (size_t k = 0; k < c.size(); ++k)
        if (!splits[k] && c[k] != 0) counted = false;
      if (!counted) continue;
      const Shape& l = metas[size_t(p.ranks()[size_t(i)])].local;
      if (l.size() != shape.size()) return std::nullopt;
      total += l[d];
    }
    shape[d] = total;
  }
  return shape;
}

std::string describe(const Meta& m, const std::optional<Shape>& shape) {
  return str_cat(shape ? shape_str(*shape) : std::string("(?)"), " ", dtype_name(m.dtype), " ",
                 m.nd_sbp.str(), " on ", m.placement->str());
}

// make_global's synchronisation: along every broadcast mesh axis, in mesh order, the group's
// first member sends its shard to the others (whose local tensors must then agree with it in
// shape and dtype, checked on the metadata every rank already has).
Tensor broadcast_axes(const Tensor& local, const Placement& p, const NdSbp& nd_sbp,
                      const std::vector<Meta>& metas, BoxingContext& ctx) {
  const int me = global_rank(ctx);
  Tensor out = local;
  bool copied = false;
  for (size_t k = 0; k < nd_sbp.size(); ++k) {
    if (!nd_sbp[k].is_broadcast()) continue;
    const SubGroup g = sub_group(p, {int64_t(k)}, me);
    if (g.members.size() == 1) continue;
    const Meta& root = metas[size_t(g.members[0])];
    for (int m : g.members) {
      const Meta& other = metas[size_t(m)];
      if (other.dtype != root.dtype || other.local != root.local)
        fail("to_global", "broadcast along mesh axis ", k, " of ", p.str(), " sends rank ",
             g.members[0], "'s ", shape_str(root.local), " ", dtype_name(root.dtype), " to rank ",
             m, ", which holds ", shape_str(other.local), " ", dtype_name(other.dtype),
             ": the ranks' local tensors must agree in shape and dtype");
    }
    if ((g.index != 0 || !out.is_contiguous()) && !copied) {  // never write the input
      out = contiguous_copy(local);
      copied = true;
    }
    comm_for(ctx, g.members)->broadcast(out, 0);
  }
  return out;
}

}  // namespace

GlobalTensor make_global(const Tensor& local, const Placement& placement, const NdSbp& nd_sbp,
                         BoxingContext& ctx, bool check_meta, bool sync_broadcast) {
  autograd::NoGradGuard no_grad;
  if (local.device().is_meta()) {
    validate_sbp("to_global", local.shape(), nd_sbp, placement);
    Shape shape = local.shape();
    for (size_t k = 0; k < nd_sbp.size(); ++k)
      if (nd_sbp[k].is_split()) shape[size_t(nd_sbp[k].axis())] *= placement.mesh()[k];
    return meta_global(shape, local.dtype(), placement, nd_sbp, ctx);
  }
  check_placement_in_world(placement, *ctx.world, "to_global");
  const int me = global_rank(ctx);
  const int world = ctx.world->size();
  const std::vector<int64_t> mine = encode(local, placement, nd_sbp);
  Tensor len = Tensor::empty({1}, DType::kInt64);
  len.data<int64_t>()[0] = int64_t(mine.size());
  Tensor lens = Tensor::empty({world}, DType::kInt64);
  ctx.world->all_gather(len, lens);
  std::vector<int64_t> counts(lens.data<int64_t>(), lens.data<int64_t>() + world);
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  Tensor buf = Tensor::empty({int64_t(mine.size())}, DType::kInt64);
  std::copy(mine.begin(), mine.end(), buf.data<int64_t>());
  Tensor all = Tensor::empty({total}, DType::kInt64);
  ctx.world->all_gather_v(buf, all, counts);
  std::vector<Meta> metas;
  int64_t off = 0;
  for (int r = 0; r < world; ++r) {
    metas.push_back(decode(all.data<int64_t>() + off, counts[size_t(r)]));
    off += counts[size_t(r)];
  }
  std::vector<std::optional<Shape>> shapes;
  for (int r = 0; r < world; ++r) shapes.push_back(implied_shape(metas, r));
  if (check_meta) {
    for (int r = 1; r < world; ++r) {
      const Meta &a = metas[0], &b = metas[size_t(r)];
      if (a.dtype == b.dtype && shapes[0] == shapes[size_t(r)] && *a.placement == *b.placement &&
          a.nd_sbp == b.nd_sbp)
        continue;
      fail("to_global", "ranks disagree on the global tensor: rank 0 has ", describe(a, shapes[0]),
           ", rank ", r, " has ", describe(b, shapes[size_t(r)]));
    }
  }
  if (!shapes[size_t(me)])
    fail("to_global", "cannot derive the global shape of ", describe(metas[size_t(me)], {}),
         ": the ranks' local tensors differ in rank");
  const Shape shape = *shapes[size_t(me)];
  validate_sbp("to_global", shape, nd_sbp, placement);
  if (check_meta) {
    for (int64_t i = 0; i < placement.size(); ++i) {
      const auto c = unravel_index(placement.mesh(), i);
      const int r = placement.ranks()[size_t(i)];
      const Shape want = local_shape(shape, nd_sbp, placement, c);
      if (metas[size_t(r)].local != want)
        fail("to_global", "rank ", r, " holds a local tensor of shape ",
             shape_str(metas[size_t(r)].local), " but ", nd_sbp.str(), " on ", placement.str(),
             " gives it ", shape_str(want), " of the global shape ", shape_str(shape),
             " (splits are balanced: rank i of p holds n/p + (i < n%p))");
    }
  } else if (auto c = placement.coords_of(me)) {
    const Shape want = local_shape(shape, nd_sbp, placement, *c);
    if (local.shape() != want)
      fail("to_global", "rank ", me, " holds a local tensor of shape ", shape_str(local.shape()),
           " but ", nd_sbp.str(), " on ", placement.str(), " gives it ", shape_str(want),
           " of the global shape ", shape_str(shape));
  }
  if (!placement.contains(me))
    return GlobalTensor{outside_shard(shape, local.dtype(), local.device()), shape, placement,
                        nd_sbp};
  return GlobalTensor{sync_broadcast ? broadcast_axes(local, placement, nd_sbp, metas, ctx) : local,
                      shape, placement, nd_sbp};
}

}  // namespace ofl::internal
