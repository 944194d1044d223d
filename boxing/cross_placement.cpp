// Boxing across placements: reshard on the source (partials must be reduced before slices can
// move), one send_recv of the intersecting slices, then reshard on the target.
#include <algorithm>
#include <map>

#include "boxing/search.h"

namespace ofl::internal {

namespace {

using Ranges = std::vector<std::pair<int64_t, int64_t>>;

int64_t overlap_numel(const Ranges& a, const Ranges& b) {
  int64_t n = 1;
  for (size_t i = 0; i < a.size(); ++i)
    n *=
        std::max<int64_t>(0, std::min(a[i].second, b[i].second) - std::max(a[i].first, b[i].first));
  return n;
}

NdSbp without_partials(const NdSbp& x) {
  std::vector<Sbp> v = x.axes();
  for (Sbp& s : v)
    if (s.is_partial()) s = Sbp::broadcast();
  return NdSbp(v);
}

}  // namespace

BoxingStep send_recv_step(const Shape& shape, DType dtype, const Placement& from_p,
                          const NdSbp& from, const Placement& to_p, const NdSbp& to,
                          const ClusterSpec& cluster) {
  // Replicas (ranks with equal ranges) form one source piece; a target reads a piece from
  // itself when it holds a replica, else from replica (target index mod replicas).
  std::map<Ranges, std::vector<int>> pieces;
  for (int64_t i = 0; i < from_p.size(); ++i)
    pieces[local_ranges(shape, from, from_p, unravel_index(from_p.mesh(), i))].push_back(
        from_p.ranks()[size_t(i)]);
  const double item = double(itemsize(dtype));
  std::map<int, double> send_s, recv_s;
  std::map<int, int64_t> recv_bytes;
  for (int64_t t = 0; t < to_p.size(); ++t) {
    const int dst = to_p.ranks()[size_t(t)];
    const Ranges want = local_ranges(shape, to, to_p, unravel_index(to_p.mesh(), t));
    for (const auto& [have, replicas] : pieces) {
      const int64_t n = overlap_numel(want, have);
      if (n == 0) continue;
      const bool local = std::find(replicas.begin(), replicas.end(), dst) != replicas.end();
      const int src = local ? dst : replicas[size_t(t) % replicas.size()];
      const double secs = cluster.send_recv(src, dst, double(n) * item);
      recv_s[dst] += secs;
      if (src != dst) send_s[src] += secs, recv_bytes[dst] += int64_t(double(n) * item);
    }
  }
  BoxingStep step;
  step.kind = StepKind::kSendRecv;
  step.from = from;
  step.to = to;
  std::vector<int> involved = from_p.ranks();
  involved.insert(involved.end(), to_p.ranks().begin(), to_p.ranks().end());
  std::sort(involved.begin(), involved.end());
  step.group_size = std::unique(involved.begin(), involved.end()) - involved.begin();
  for (const auto& [r, s] : recv_s) step.seconds = std::max(step.seconds, s);
  for (const auto& [r, s] : send_s) step.seconds = std::max(step.seconds, s);
  for (const auto& [r, b] : recv_bytes) step.bytes = std::max(step.bytes, b);
  return step;
}

std::optional<BoxingPlan> plan_cross_placement(const Shape& shape, DType dtype,
                                               const Placement& from_p, const NdSbp& from,
                                               const Placement& to_p, const NdSbp& to,
                                               const ClusterSpec& cluster) {
  std::vector<NdSbp> sources = {without_partials(from),
                                NdSbp(std::vector<Sbp>(from.size(), Sbp::broadcast()))};
  std::vector<NdSbp> targets = {without_partials(to)};
  // Reshard on the source straight to the target's layout when the meshes have equal rank
  // (e.g. P -> S is a reduce-scatter there, then equal slices move).
  if (from.size() == to.size()) sources.push_back(targets.front());
  std::optional<BoxingPlan> best;
  for (const NdSbp& src : sources) {
    auto before = plan_same_placement(shape, dtype, from_p, from, src, cluster);
    if (!before) continue;
    for (const NdSbp& dst : targets) {
      auto after = plan_same_placement(shape, dtype, to_p, dst, to, cluster);
      if (!after) continue;
      BoxingPlan plan = *before;
      plan.steps.push_back(send_recv_step(shape, dtype, from_p, src, to_p, dst, cluster));
      plan.steps.insert(plan.steps.end(), after->steps.begin(), after->steps.end());
      plan.seconds = 0;
      for (const BoxingStep& s : plan.steps) plan.seconds += s.seconds;
      if (!best || plan.seconds < best->seconds) best = std::move(plan);
    }
  }
  return best;
}

}  // namespace ofl::internal
