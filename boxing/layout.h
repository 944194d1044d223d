// Layout arithmetic the boxing search needs: per-rank buffer sizes, per-axis sub-groups, and
// which per-axis transitions are exact under OneFlow's nested n-d semantics.
#pragma once
#include <cstdint>
#include <vector>

#include "sbp/placement.h"
#include "sbp/sbp.h"

namespace ofl::internal {

// The largest local shard (in elements) any rank holds. Balanced splits give lower indices the
// larger pieces, so mesh coordinate (0, ..., 0) holds the largest shard along every axis.
int64_t max_local_numel(const Shape& shape, const NdSbp& nd_sbp, const Placement& placement);

// The sub-groups (global ranks, row-major over `axes`) a collective on the given contiguous
// mesh axes runs on: one per setting of the other mesh coordinates.
std::vector<std::vector<int>> mesh_groups(const Placement& placement,
                                          const std::vector<int64_t>& axes);

// Whether changing mesh axes `axes` (contiguous, all holding `from` in `state`) to `to` with one
// 1-d step is exact. Splits nest in mesh-axis order and partials reduce innermost axis first,
// so it is not when:
//  - an inner mesh axis (after `axes`) splits a tensor axis that from or to splits: the group's
//    shards are then strided, not contiguous (go through B, or change the inner axis first);
//  - from is P(op) being reduced while an inner mesh axis is partial with another op;
//  - merged axes split a tensor axis unevenly so that the nested split differs from the flat
//    split over the merged group.
bool transition_is_exact(const Shape& shape, const Placement& placement, const NdSbp& state,
                         const std::vector<int64_t>& axes, const Sbp& from, const Sbp& to);

}  // namespace ofl::internal
