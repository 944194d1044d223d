// Streamed inputs (OpDef::streamed_inputs): an input its signature wants broadcast that arrived
// split along the op's streamed dim is not gathered; its compute gets the group holding the
// other blocks instead. Shared by the eager executor and graph mode's.
#pragma once
#include <vector>

#include "boxing/reshard.h"
#include "core/op_def.h"
#include "sbp/placement.h"

namespace ofl::internal {

// The peers of an input of logical `shape` laid out as `from`, streamed along mesh `axes`
// (streamed_axes): the ranks differing from this one (at `coords`) only on those axes, ordered
// by where their blocks begin along `dim`.
StreamedBlocks streamed_blocks(const Shape& shape, const NdSbp& from,
                               const std::vector<int64_t>& axes, int dim, const Placement& p,
                               const std::vector<int64_t>& coords, BoxingContext& ctx);

}  // namespace ofl::internal
