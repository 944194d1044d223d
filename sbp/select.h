// Signature enumeration and selection for one call on global tensors: the candidates its op's
// rule allows under the call's constraints, and the cheapest of them under the cost model
// (DESIGN.md: one ClusterSpec and one set of formulas serve eager choice, boxing and the planner).
//
// A candidate's price is the boxing of its inputs, the roofline time of its compute on the
// largest shard (without the saving of splits it would introduce from replicated inputs), and
// the reduction its partial outputs owe the next op. Ties go to fewer
// communication steps, then less output memory, then broadcast over partial.
#pragma once
#include <functional>
#include <vector>

#include "core/op_def.h"
#include "sbp/cluster_spec.h"
#include "sbp/placement.h"
#include "sbp/signature.h"

namespace ofl::internal {

// One input of the call as selection sees it. `layout` null: an absent input or a local 0-d
// constant (which acts as B).
struct CallInput {
  const Shape* shape = nullptr;  // logical
  DType dtype = DType::kFloat32;
  const NdSbp* layout = nullptr;
};

struct SbpCall {
  const OpDef* def;
  std::vector<CallInput> in;
  const std::vector<Shape>* out_shapes;  // logical
  DType out_dtype;
  const Placement* placement;
  bool inplace = false;  // output 0 is input 0 and keeps its layout
  const Attrs* attrs = nullptr;
  // Per output, when set: its partial values owe no reduction here, because the whole graph
  // around the call is known to sum them for free (in a fused gradient bucket) or never.
  const std::vector<bool>* owes_nothing = nullptr;
};

// The price of turning a tensor's layout `from` into `to` on the call's placement (the boxing
// planner's, which lives above sbp/).
struct Transition {
  double seconds = 0;
  int steps = 0;
};
using TransitionCost =
    std::function<Transition(const Shape& shape, DType dtype, const NdSbp& from, const NdSbp& to)>;

// The shape whose conversion prices a streamed input's exchanges' latency (OpDef::
// streamed_inputs: ring attention's keys and values): one element across every dimension but the
// op's streamed one. A ring passes its blocks in as many exchanges as that gather's hops, each
// waiting on its peer, whatever the compute hides of their bytes.
Shape stream_probe(const OpDef& def, const Shape& shape);

struct SignatureChoice {
  NdSbpSignature sig;
  double boxing_seconds = 0;   // the inputs' boxing
  double compute_seconds = 0;  // roofline of the largest shard
  double owed_seconds = 0;     // the partial outputs' owed reductions
  double flops = 0;            // of the largest shard
  // The compute the choice ranks by: without the saving of splits it introduces (select.cpp).
  double ranked_compute_seconds = 0;
  double price() const { return boxing_seconds + ranked_compute_seconds + owed_seconds; }
};

// What the op's rule sees of the call.
SbpQuery sbp_query(const SbpCall& call);

// The n-d candidates: per mesh axis, the rule's 1-d signatures (plus all-broadcast) that local
// inputs (B only) and an in-place self (its own layout) allow. Raises naming the op when an
// in-place call has none.
std::vector<NdSbpSignature> candidate_signatures(const SbpCall& call);

// The roofline time of the call's compute under `sig`, on its largest shard.
double compute_seconds(const SbpCall& call, const NdSbpSignature& sig, const ClusterSpec& cluster);

// The cheapest candidate; raises naming the op when there is none.
SignatureChoice select_signature(const SbpCall& call, const ClusterSpec& cluster,
                                 const TransitionCost& transition);

}  // namespace ofl::internal
