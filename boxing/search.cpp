#include "boxing/search.h"

#include <algorithm>
#include <map>
#include <queue>
#include <set>
#include <tuple>

#include "boxing/layout.h"
#include "boxing/rule.h"

namespace ofl::internal {

namespace {

// Lexicographic: seconds, then fewer steps, then fewer communication steps.
using Cost = std::tuple<double, int, int>;

std::vector<Sbp> candidate_sbps(const Shape& shape, const NdSbp& from, const NdSbp& to) {
  std::vector<Sbp> out = {Sbp::broadcast()};
  for (int64_t d = 0; d < int64_t(shape.size()); ++d) out.push_back(Sbp::split(d));
  for (const NdSbp* nd : {&from, &to})
    for (const Sbp& s : nd->axes())
      if (s.is_partial() && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  return out;
}

NdSbp with_axes(const NdSbp& x, const std::vector<int64_t>& axes, const Sbp& s) {
  std::vector<Sbp> v = x.axes();
  for (int64_t a : axes) v[size_t(a)] = s;
  return NdSbp(v);
}

// The sub-groups of each set of mesh axes, computed once per plan: the search prices many steps
// on the same axes, and a simulated mesh has a thousand ranks to group. A ClusterSpec prices a
// group by its size, its slowest link and its spread over nodes, so one group of each kind
// stands for the others.
class GroupsMemo {
 public:
  GroupsMemo(const Placement& p, const ClusterSpec& cluster) : p_(p), cluster_(cluster) {}
  const std::vector<std::vector<int>>& operator()(const std::vector<int64_t>& axes) {
    auto it = memo_.find(axes);
    if (it != memo_.end()) return it->second;
    std::vector<std::vector<int>> kinds;
    std::set<std::pair<size_t, ClusterSpec::Spread>> seen;  // (a spread over nodes: the link)
    for (std::vector<int>& g : mesh_groups(p_, axes))
      if (seen.insert({g.size(), cluster_.spread(g)}).second) kinds.push_back(std::move(g));
    return memo_.emplace(axes, std::move(kinds)).first->second;
  }

 private:
  const Placement& p_;
  const ClusterSpec& cluster_;
  std::map<std::vector<int64_t>, std::vector<std::vector<int>>> memo_;
};

// One step changing `axes` of x to `t` with rule r; the cost is the slowest sub-group's.
BoxingStep make_step(const BoxingRule& r, const Shape& shape, DType dtype, const Placement& p,
                     const NdSbp& x, const std::vector<int64_t>& axes, const Sbp& t,
                     const ClusterSpec& cluster, GroupsMemo& memo) {
  BoxingStep step;
  step.mesh_axes = axes;
  step.from = x;
  step.to = with_axes(x, axes, t);
  const int64_t item = int64_t(itemsize(dtype));
  const int64_t in = item * max_local_numel(shape, x, p);
  const int64_t out = item * max_local_numel(shape, step.to, p);
  r.emit(x[size_t(axes.front())], t, in, out, step);
  const auto& groups = memo(axes);
  step.group_size = int64_t(groups.front().size());
  for (const auto& g : groups) step.seconds = std::max(step.seconds, r.seconds(cluster, g, step));
  return step;
}

BoxingPlan finish(std::vector<BoxingStep> steps) {
  BoxingPlan plan;
  plan.steps = std::move(steps);
  for (const BoxingStep& s : plan.steps) plan.seconds += s.seconds;
  return plan;
}

}  // namespace

namespace {

// Dijkstra from `from` over the layouts reachable with `cands` on each axis, until `to` (or, when
// `to` is null, every reachable layout) is settled. Settled layouts in order with their plans.
std::vector<std::pair<NdSbp, BoxingPlan>> search(const Shape& shape, DType dtype,
                                                 const Placement& p, const NdSbp& from,
                                                 const NdSbp* to, const std::vector<Sbp>& cands,
                                                 const ClusterSpec& cluster) {
  GroupsMemo groups(p, cluster);
  std::vector<NdSbp> states = {from};
  std::unordered_map<NdSbp, int> ids = {{from, 0}};
  std::vector<Cost> best = {Cost{0.0, 0, 0}};
  std::vector<int> prev = {-1};
  std::vector<BoxingStep> via = {BoxingStep{}};
  std::vector<bool> done = {false};
  std::vector<int> settled;
  using Item = std::pair<Cost, int>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> queue;
  queue.push({best[0], 0});
  const int64_t n = int64_t(from.size());
  while (!queue.empty()) {
    auto [cost, u] = queue.top();
    queue.pop();
    if (done[size_t(u)]) continue;
    done[size_t(u)] = true;
    settled.push_back(u);
    if (to != nullptr && states[size_t(u)] == *to) break;
    const NdSbp x = states[size_t(u)];
    for (int64_t k = 0; k < n; ++k) {
      std::vector<int64_t> axes;
      for (int64_t m = k; m < n && x[size_t(m)] == x[size_t(k)]; ++m) {
        axes.push_back(m);
        for (const Sbp& t : cands) {
          const BoxingRule* r = find_rule(x[size_t(k)], t);
          if (r == nullptr || r == &rules::kIdentity) continue;
          if (!transition_is_exact(shape, p, x, axes, x[size_t(k)], t)) continue;
          BoxingStep step = make_step(*r, shape, dtype, p, x, axes, t, cluster, groups);
          Cost c{std::get<0>(cost) + step.seconds, std::get<1>(cost) + 1,
                 std::get<2>(cost) + int(is_communication(step.kind))};
          auto [it, fresh] = ids.try_emplace(step.to, int(states.size()));
          if (fresh) {
            states.push_back(step.to);
            best.push_back(c);
            prev.push_back(u);
            via.push_back(step);
            done.push_back(false);
          } else if (c < best[size_t(it->second)]) {
            best[size_t(it->second)] = c;
            prev[size_t(it->second)] = u;
            via[size_t(it->second)] = step;
          } else {
            continue;
          }
          queue.push({c, it->second});
        }
      }
    }
  }
  std::vector<std::pair<NdSbp, BoxingPlan>> out;
  for (int s : settled) {
    if (to != nullptr && !(states[size_t(s)] == *to)) continue;
    std::vector<BoxingStep> steps;
    for (int v = s; prev[size_t(v)] >= 0; v = prev[size_t(v)]) steps.push_back(via[size_t(v)]);
    std::reverse(steps.begin(), steps.end());
    out.emplace_back(states[size_t(s)], finish(std::move(steps)));
  }
  return out;
}

}  // namespace

std::optional<BoxingPlan> plan_same_placement(const Shape& shape, DType dtype, const Placement& p,
                                              const NdSbp& from, const NdSbp& to,
                                              const ClusterSpec& cluster) {
  if (from == to) return BoxingPlan{};
  auto found = search(shape, dtype, p, from, &to, candidate_sbps(shape, from, to), cluster);
  if (found.empty()) return std::nullopt;
  return std::move(found.front().second);
}

std::vector<std::pair<NdSbp, BoxingPlan>> plans_from(const Shape& shape, DType dtype,
                                                     const Placement& p, const NdSbp& from,
                                                     const NdSbp& to, const ClusterSpec& cluster) {
  const std::vector<Sbp> cands = candidate_sbps(shape, from, to);
  auto found = search(shape, dtype, p, from, nullptr, cands, cluster);
  // A layout the search for it would have run with other candidates is left out.
  std::erase_if(found,
                [&](const auto& f) { return candidate_sbps(shape, from, f.first) != cands; });
  return found;
}

BoxingPlan fallback_plan(const Shape& shape, DType dtype, const Placement& from_p,
                         const NdSbp& from, const Placement& to_p, const NdSbp& to,
                         const ClusterSpec& cluster, const std::string& why) {
  std::vector<BoxingStep> steps;
  GroupsMemo from_groups(from_p, cluster), to_groups(to_p, cluster);
  // Innermost mesh axis first: every gather/reduce then sees only B on the inner axes.
  NdSbp x = from;
  for (int64_t k = int64_t(from.size()); k-- > 0;) {
    if (x[size_t(k)].is_broadcast()) continue;
    const BoxingRule* r = find_rule(x[size_t(k)], Sbp::broadcast());
    steps.push_back(
        make_step(*r, shape, dtype, from_p, x, {k}, Sbp::broadcast(), cluster, from_groups));
    x = steps.back().to;
  }
  NdSbp y(std::vector<Sbp>(to.size(), Sbp::broadcast()));
  if (!(from_p == to_p)) steps.push_back(send_recv_step(shape, dtype, from_p, x, to_p, y, cluster));
  // Outermost mesh axis first: every slice then sees only B on the inner axes.
  for (int64_t k = 0; k < int64_t(to.size()); ++k) {
    if (to[size_t(k)].is_broadcast()) continue;
    const BoxingRule* r = find_rule(Sbp::broadcast(), to[size_t(k)]);
    steps.push_back(make_step(*r, shape, dtype, to_p, y, {k}, to[size_t(k)], cluster, to_groups));
    y = steps.back().to;
  }
  BoxingPlan plan = finish(std::move(steps));
  plan.fallback = true;
  plan.note = "fallback: to B, then slice; " + why;
  return plan;
}

BoxingPlan plan_boxing(const Shape& shape, DType dtype, const Placement& from_p, const NdSbp& from,
                       const Placement& to_p, const NdSbp& to, const ClusterSpec& cluster) {
  validate_sbp("boxing", shape, from, from_p);
  validate_sbp("boxing", shape, to, to_p);
  std::optional<BoxingPlan> plan =
      from_p == to_p ? plan_same_placement(shape, dtype, from_p, from, to, cluster)
                     : plan_cross_placement(shape, dtype, from_p, from, to_p, to, cluster);
  if (plan) return *plan;
  return fallback_plan(shape, dtype, from_p, from, to_p, to, cluster,
                       "no exact path from " + from.str() + " on " + from_p.str() + " to " +
                           to.str() + " on " + to_p.str());
}

size_t PlanCache::KeyHash::operator()(const Key& k) const {
  size_t h = std::hash<int>()(int(k.dtype));
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (int64_t d : k.shape) mix(std::hash<int64_t>()(d));
  mix(k.from_p.hash());
  mix(k.from.hash());
  mix(k.to_p.hash());
  mix(k.to.hash());
  return h;
}

std::shared_ptr<const BoxingPlan> PlanCache::get(const Shape& shape, DType dtype,
                                                 const Placement& from_p, const NdSbp& from,
                                                 const Placement& to_p, const NdSbp& to) {
  Key key{shape, dtype, from_p, from, to_p, to};
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = plans_.find(key);
    if (it != plans_.end()) {
      ++hits_;
      return it->second;
    }
    ++misses_;
  }
  if (from_p == to_p && !(from == to)) {
    // One search from `from` settles the plans to every layout it reaches: keep them all (the
    // planner asks for many layouts from each source).
    validate_sbp("boxing", shape, from, from_p);
    validate_sbp("boxing", shape, to, to_p);
    auto found = plans_from(shape, dtype, from_p, from, to, cluster_);
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [layout, plan] : found)
      plans_.try_emplace(Key{shape, dtype, from_p, from, to_p, layout},
                         std::make_shared<const BoxingPlan>(std::move(plan)));
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
  }
  auto plan = std::make_shared<const BoxingPlan>(
      plan_boxing(shape, dtype, from_p, from, to_p, to, cluster_));
  std::lock_guard<std::mutex> lock(mu_);
  return plans_.try_emplace(std::move(key), std::move(plan)).first->second;
}

size_t PlanCache::CodeHash::operator()(const std::vector<int64_t>& code) const {
  size_t h = code.size();
  for (int64_t v : code) h ^= size_t(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

std::shared_ptr<const SignatureChoice> PlanCache::signature(
    const std::vector<int64_t>& key, const std::function<SignatureChoice()>& choose) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = signatures_.find(key); it != signatures_.end()) return it->second;
  }
  auto made = std::make_shared<const SignatureChoice>(choose());  // (choose takes plans: unlocked)
  std::lock_guard<std::mutex> lock(mu_);
  if (signatures_.size() >= kMaxSignatures) signatures_.clear();
  signatures_.emplace(key, made);
  return made;
}

size_t PlanCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return plans_.size();
}

void PlanCache::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  plans_.clear();
  signatures_.clear();
  hits_ = misses_ = 0;
}

}  // namespace ofl::internal
