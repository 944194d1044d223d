// Boxing plans as data: the steps that turn one (placement, NdSbp) layout into another, each
// with its collective, mesh axes, bytes and predicted seconds. Executing a plan is separate.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sbp/sbp.h"

namespace ofl::internal {

enum class StepKind : uint8_t {
  kAllGather,      // S -> B
  kAllReduce,      // P(op) -> B, with the partial's op
  kReduceScatter,  // P(op) -> S
  kAllToAll,       // S(i) -> S(j)
  kLocalSlice,     // B -> S: keep this rank's slice
  kLocalZeroFill,  // B -> P(sum): one rank keeps, the others zero; B -> P(max|min): all keep
  kLocalPad,       // S -> P(op): the full tensor, the rest filled with op's identity (0 for sum)
  kSendRecv,       // across placements: each rank receives the slices it intersects
};
const char* step_kind_name(StepKind k);  // "all_gather", ...
bool is_communication(StepKind k);

struct BoxingStep {
  StepKind kind = StepKind::kAllGather;
  PartialOp op = PartialOp::kSum;  // for all_reduce, reduce_scatter, zero-fill and pad
  // Mesh axes of the source placement the step runs on; several when merged into one collective
  // over the flattened sub-group. Empty for send_recv.
  std::vector<int64_t> mesh_axes;
  int64_t group_size = 1;  // ranks per sub-group (product over mesh_axes)
  NdSbp from, to;
  int64_t bytes = 0;  // per rank: the largest buffer the step handles on any rank
  double seconds = 0;
  std::string str() const;
};

struct BoxingPlan {
  // Steps run in order. For a cross-placement plan the steps before send_recv run on the source
  // placement and the ones after it on the target.
  std::vector<BoxingStep> steps;
  double seconds = 0;
  bool fallback = false;  // no search path: "to B, then slice" (says so in str())
  std::string note;
  bool empty() const { return steps.empty(); }
  int num_communication_steps() const;
  std::string str() const;
};

// What the cost model predicts for one global call that ran (real or meta, on a placement of any
// size): the op's chosen signature, the boxing of its inputs and the roofline time of its compute
// on the largest shard. Explicit reshards are records of their own ("reshard"), and so are the
// fused gradient reductions at the end of backward ("reduce_fused"). The planner reads these
// from a step run on meta tensors over a simulated placement.
struct PredictedCost {
  std::string op;
  std::string signature;    // "S(0), B -> S(0)" (2-d: "(S(0), B), ..."); "S(0) -> B" (reshard)
  double comm_seconds = 0;  // boxing: communication and the local steps around it
  int64_t comm_bytes = 0;   // per rank, summed over the communication steps
  int comm_steps = 0;
  double compute_seconds = 0;      // roofline, one rank's shards
  double flops = 0;                // one rank's
  std::vector<std::string> steps;  // the boxing steps, as BoxingStep::str()
  void add(const BoxingPlan& plan);
  std::string str() const;  // "matmul S(0), B -> S(0): 0 B/rank, boxing 0.00 us, compute 1.20 us"
};

std::string bytes_str(double bytes);      // "1.0 MB"
std::string seconds_str(double seconds);  // "0.52 ms"

}  // namespace ofl::internal
