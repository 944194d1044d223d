// Executing boxing: a global tensor is this rank's shard of one logical tensor laid over a
// placement by an NdSbp; reshard() plans (cached) and runs the plan's steps with collectives
// on the per-mesh-axis sub-groups of the world communicator.
#pragma once
#include <memory>

#include "boxing/search.h"
#include "core/comm/communicator.h"
#include "sbp/placement.h"

namespace ofl::internal {

struct GlobalTensor {
  Tensor local;  // this rank's shard; an empty tensor (numel 0) on ranks outside the placement
  Shape shape;   // logical
  Placement placement;
  NdSbp nd_sbp;
};

// Everything reshard needs besides the tensor: the world communicator (sub-groups come from it),
// the plan cache, an optional log of the collectives run (for tests and comm_log()) and an
// optional log of what the cost model predicts for each global call (cost_log()).
struct BoxingContext {
  std::shared_ptr<comm::Communicator> world;
  std::shared_ptr<PlanCache> cache;
  std::vector<std::string>* log = nullptr;      // appends e.g. "all_gather group[0,1] 4096 B"
  std::vector<PredictedCost>* costs = nullptr;  // appends one record per op, reshard, reduction
};

// A Tensor handle on g's shard carrying g's layout and the context ops on it use.
Tensor as_tensor(const GlobalTensor& g, std::shared_ptr<BoxingContext> ctx);
// The GlobalTensor behind a global Tensor handle (raises for a local tensor, naming `op`).
GlobalTensor as_global(const Tensor& t, const char* op);

// Raises, naming `op`, when the placement names ranks the world does not have (only meta tensors
// may sit on such a simulated placement).
void check_placement_in_world(const Placement& placement, const comm::Communicator& world,
                              const char* op);
// Wraps this rank's local tensor as a shard of a global tensor. The logical shape is derived
// (split axes add up the shards along their mesh axis); with check_meta, every rank's shape,
// dtype, placement and sbp are compared and a mismatch raises on every rank. A meta local tensor
// exchanges nothing: every rank is taken to hold a shard of its shape (PyTorch's
// DTensor.from_local), and the placement may be simulated (see meta_global).
// With sync_broadcast (OneFlow's semantics), each broadcast mesh axis takes the data of its
// first member (coordinate 0 along that axis; rank 0 for a 1-d B): the ranks then hold one
// logical tensor even where their local data differed. Split axes keep each rank's data as its
// shard and partial axes as its addend. The input is never written: receivers get a copy.
GlobalTensor make_global(const Tensor& local, const Placement& placement, const NdSbp& nd_sbp,
                         BoxingContext& ctx, bool check_meta, bool sync_broadcast = true);

// A rank's shard of a tensor on a placement it is outside of (another pipeline stage's): empty,
// with the logical tensor's number of dimensions (each of extent 0), so that code reading dim()
// sees the logical rank. A 0-d tensor's is one element that nothing reads.
Tensor outside_shard(const Shape& shape, DType dtype, Device device);

// A meta global tensor: this rank's shard is a meta tensor of its shard shape (outside_shard's
// on ranks outside the placement), with no memory. The placement may name ranks the world does not
// have (1024 ranks in a one-process world): ops on meta global tensors choose signatures, plan
// boxing and predict costs for every rank, and never communicate.
GlobalTensor meta_global(const Shape& shape, DType dtype, const Placement& placement,
                         const NdSbp& nd_sbp, const BoxingContext& ctx);

// The same logical tensor laid out as (placement, nd_sbp). The plan's predicted cost is added to
// `into` (a global op's record) or, without it, logged as a "reshard" record. A meta tensor only
// plans: its shard becomes the meta shard of the new layout.
GlobalTensor reshard(const GlobalTensor& x, const Placement& placement, const NdSbp& nd_sbp,
                     BoxingContext& ctx, PredictedCost* into = nullptr);

// The whole logical tensor on every rank of the world (for numpy() and tests).
Tensor to_full(const GlobalTensor& x, BoxingContext& ctx);

// The shard a rank at `coords` of `placement` holds of the logical tensor `full` (tests, and
// creation of global tensors from a full tensor on every rank).
Tensor shard_of(const Tensor& full, const Placement& placement, const NdSbp& nd_sbp,
                const std::vector<int64_t>& coords);

}  // namespace ofl::internal
