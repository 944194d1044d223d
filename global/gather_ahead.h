// Eager ZeRO's parameter gathers, fused and ahead of use, as FSDP's units prefetch: a split
// parameter (a leaf that requires grad) an eager op wants broadcast is all-gathered together with
// the parameters that followed it in the last pass, in one collective, and the others wait,
// gathered, for their ops. The order is recorded on the first pass; every rank runs the same
// program, so every rank fuses the same buckets. Nothing is kept past the end of a backward, and
// a parameter written in place since its gather (its shard's version) is gathered again.
// Calls that record history (a training step's forward, whose backward ends the pass) gather;
// the others (the backward's ops, which want the same parameters again) take what was gathered.
// A permutation of a parameter (Linear's weight.t()) is gathered as the parameter, then
// permuted. OFL_GATHER_AHEAD=0 turns it off: each op then gathers its own parameter.
#pragma once
#include <optional>

#include "boxing/reshard.h"

namespace ofl::internal {

// This rank's shard of `input` (global input `g`, a parameter or a permutation of one) in layout
// `to`, gathered ahead with the parameters that came after it, or nullopt where this does not
// apply (no parameter, not split -> broadcast alone, meta tensors, not gathered yet outside a
// recorded call, turned off).
std::optional<Tensor> gathered_ahead(const Tensor& input, const GlobalTensor& g, const NdSbp& to,
                                     BoxingContext& ctx);

// Drops every gathered parameter this thread holds (the end of a backward).
void drop_gathered_ahead();

}  // namespace ofl::internal
