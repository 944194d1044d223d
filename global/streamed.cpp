#include "global/streamed.h"

#include <algorithm>
#include <numeric>

#include "boxing/ranks.h"

namespace ofl::internal {

StreamedBlocks streamed_blocks(const Shape& shape, const NdSbp& from,
                               const std::vector<int64_t>& axes, int dim, const Placement& p,
                               const std::vector<int64_t>& coords, BoxingContext& ctx) {
  const SubGroup g = sub_group(p, axes, p.rank_at(coords));
  std::vector<int64_t> starts, lengths;
  for (int rank : g.members) {
    const std::vector<int64_t> at = *p.coords_of(rank);
    starts.push_back(local_starts(shape, from, p, at)[size_t(dim)]);
    lengths.push_back(local_shape(shape, from, p, at)[size_t(dim)]);
  }
  std::vector<size_t> order(g.members.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return starts[a] < starts[b]; });
  StreamedBlocks out;
  std::vector<int> members;
  for (size_t k : order) {
    members.push_back(g.members[k]);
    out.starts.push_back(starts[k]);
    out.lengths.push_back(lengths[k]);
  }
  out.group = comm_for(ctx, members);
  return out;
}

}  // namespace ofl::internal
