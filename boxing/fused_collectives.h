// Bucketed collectives of many global tensors at once (boxing/fused_collectives.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "boxing/reshard.h"

namespace ofl::internal {

// Reshards many tensors at once, each from P(sum) to B or S on the same mesh `axes` of one
// placement (laid out alike elsewhere): their pieces go out packed into buffers of up to
// bucket_bytes, one collective per buffer (an all_reduce when every target is B, else a
// reduce_scatter). Every member of a sub-group passes the same shapes and layouts in the same
// order. Returns this rank's shards of the results, in order; the inputs are left intact.
inline constexpr int64_t kGradBucketBytes = 25 << 20;  // DDP's default bucket_cap_mb
std::vector<Tensor> reduce_fused(const std::vector<GlobalTensor>& xs,
                                 const std::vector<NdSbp>& targets,
                                 const std::vector<int64_t>& axes, BoxingContext& ctx,
                                 int64_t bucket_bytes);
// Reshards many tensors at once, each from S to B on the same mesh `axes` of one placement (laid
// out alike elsewhere): one all-gather of every member's shards, packed. Every member of a
// sub-group passes the same shapes and layouts in the same order. Returns this rank's shards of
// the results, in order.
std::vector<Tensor> gather_fused(const std::vector<GlobalTensor>& xs,
                                 const std::vector<NdSbp>& targets,
                                 const std::vector<int64_t>& axes, BoxingContext& ctx);

}  // namespace ofl::internal
