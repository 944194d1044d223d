// Boxing plans: the cheapest list of steps from one (placement, NdSbp) layout to another.
//
// Same placement: Dijkstra over intermediate NdSbp states. An edge changes one mesh axis's Sbp
// with a 1-d rule (boxing/rules/) run on that axis's sub-groups, or changes several contiguous
// mesh axes that agree (e.g. (S(0), S(0)) -> (B, B)) with one collective over the flattened
// group. Only transitions exact under nesting are edges (see transition_is_exact). Cost order:
// seconds, then fewer steps, then fewer communication steps.
//
// Different placements: source-side reshard (to remove partials, or to B when that is cheaper),
// one send_recv of the intersecting slices, then a target-side reshard (to add partials).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "boxing/plan.h"
#include "core/dtype.h"
#include "sbp/cluster_spec.h"
#include "sbp/placement.h"
#include "sbp/select.h"

namespace ofl::internal {

BoxingPlan plan_boxing(const Shape& shape, DType dtype, const Placement& from_p, const NdSbp& from,
                       const Placement& to_p, const NdSbp& to, const ClusterSpec& cluster);

// The min-cost same-placement plan, or nullopt when no exact path exists.
std::optional<BoxingPlan> plan_same_placement(const Shape& shape, DType dtype,
                                              const Placement& placement, const NdSbp& from,
                                              const NdSbp& to, const ClusterSpec& cluster);
// The min-cost same-placement plans from `from` to every layout one search for `to` settles
// (itself included when reachable): what plan_same_placement gives for each of them.
std::vector<std::pair<NdSbp, BoxingPlan>> plans_from(const Shape& shape, DType dtype,
                                                     const Placement& placement, const NdSbp& from,
                                                     const NdSbp& to, const ClusterSpec& cluster);
// The cheapest cross-placement plan: reshard on the source, send_recv, reshard on the target.
std::optional<BoxingPlan> plan_cross_placement(const Shape& shape, DType dtype,
                                               const Placement& from_p, const NdSbp& from,
                                               const Placement& to_p, const NdSbp& to,
                                               const ClusterSpec& cluster);
// One send_recv of intersecting slices; `from` and `to` must hold no partials. Its cost is the
// slowest rank's messages (alpha each) plus bytes over the link, sending or receiving.
BoxingStep send_recv_step(const Shape& shape, DType dtype, const Placement& from_p,
                          const NdSbp& from, const Placement& to_p, const NdSbp& to,
                          const ClusterSpec& cluster);

// The explicit "to B, then slice" plan used when the search finds nothing (it should not).
BoxingPlan fallback_plan(const Shape& shape, DType dtype, const Placement& from_p,
                         const NdSbp& from, const Placement& to_p, const NdSbp& to,
                         const ClusterSpec& cluster, const std::string& why);

// Plans keyed by (shape, dtype, from placement, from sbp, to placement, to sbp) for one cluster.
class PlanCache {
 public:
  explicit PlanCache(ClusterSpec cluster) : cluster_(std::move(cluster)) {}
  // The cached plan, planning it on a miss. Shared so a hit copies no steps.
  std::shared_ptr<const BoxingPlan> get(const Shape& shape, DType dtype, const Placement& from_p,
                                        const NdSbp& from, const Placement& to_p, const NdSbp& to);
  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }
  size_t size() const;
  void clear();
  const ClusterSpec& cluster() const { return cluster_; }
  // The signature eager calls with this metadata choose under this cluster (global/: the
  // call's op, shapes, dtypes, layouts, placement and attributes encoded as integers), made by
  // `choose` on a miss. Kept up to kMaxSignatures, then started afresh.
  std::shared_ptr<const SignatureChoice> signature(const std::vector<int64_t>& key,
                                                   const std::function<SignatureChoice()>& choose);
  static constexpr size_t kMaxSignatures = 1 << 16;

 private:
  struct Key {
    Shape shape;
    DType dtype;
    Placement from_p;
    NdSbp from;
    Placement to_p;
    NdSbp to;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  ClusterSpec cluster_;
  mutable std::mutex mu_;
  std::unordered_map<Key, std::shared_ptr<const BoxingPlan>, KeyHash> plans_;
  struct CodeHash {
    size_t operator()(const std::vector<int64_t>& code) const;
  };
  std::unordered_map<std::vector<int64_t>, std::shared_ptr<const SignatureChoice>, CodeHash>
      signatures_;
  int64_t hits_ = 0, misses_ = 0;
};

}  // namespace ofl::internal
