// This rank in a boxing context, and the mesh sub-groups collectives run on with their
// communicators: shared by the executor of boxing plans (reshard.cpp) and make_global
// (make_global.cpp).
#pragma once
#include <algorithm>
#include <memory>
#include <vector>

#include "boxing/layout.h"
#include "boxing/reshard.h"
#include "core/error.h"

namespace ofl::internal {

// The global rank of this process.
inline int global_rank(const BoxingContext& ctx) {
  return ctx.world->ranks()[size_t(ctx.world->rank())];
}

inline int world_index(const BoxingContext& ctx, int global) {
  const auto& r = ctx.world->ranks();
  auto it = std::find(r.begin(), r.end(), global);
  OFL_CHECK(it != r.end(), "rank ", global, " is not in the world");
  return int(it - r.begin());
}

struct SubGroup {
  std::vector<int> members;  // global ranks, row-major over the step's mesh axes
  int index = 0;             // this rank's position
};

inline SubGroup sub_group(const Placement& p, const std::vector<int64_t>& axes, int rank) {
  for (auto& g : mesh_groups(p, axes)) {
    auto it = std::find(g.begin(), g.end(), rank);
    if (it != g.end()) return {g, int(it - g.begin())};
  }
  OFL_CHECK(false, "rank ", rank, " is in no sub-group of ", p.str());
  return {};
}

inline std::shared_ptr<comm::Communicator> comm_for(BoxingContext& ctx,
                                                    const std::vector<int>& members) {
  if (members.size() == 1) return comm::make_local_communicator();
  return ctx.world->group(members);
}

}  // namespace ofl::internal
