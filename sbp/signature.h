// SBP signatures: the 1-d layouts an op accepts for its inputs and gives its outputs, and the
// rule an op declares to list them for a call. n-d signatures are one 1-d signature per mesh
// axis (sbp/signature.cpp combines them).
#pragma once
#include <string>
#include <vector>

#include "core/op_def.h"
#include "core/shape.h"
#include "sbp/sbp.h"

namespace ofl::internal {

struct SbpSignature {
  std::vector<Sbp> in;      // one per input (an absent optional input's entry is ignored)
  std::vector<Sbp> out;     // one per output
  std::string str() const;  // "S(0), B -> S(0)"
  bool operator==(const SbpSignature& o) const = default;
};

// What a rule sees of one call: logical shapes, the op's typed attributes (axes, flags) and the
// number of ranks a split may be spread over (for rules whose validity depends on
// divisibility, e.g. reshape across merged dimensions).
struct SbpQuery {
  std::vector<Shape> in;
  std::vector<Shape> out;
  const Attrs* typed = nullptr;  // the call's typed attributes
  int64_t parallel_num = 1;
};

// The 1-d signatures an op declares. The all-broadcast signature is always valid and is added
// by the executor when a rule leaves it out.
struct SbpRule {
  const char* name;  // "elementwise", "matmul", ... (for messages and the conformance report)
  std::vector<SbpSignature> (*signatures)(const SbpQuery& q);
};

// B on every input and output.
SbpSignature all_broadcast_signature(size_t num_in, size_t num_out);

// The n-d signatures of a mesh with `per_axis[k]` the 1-d candidates of mesh axis k: their
// cartesian product, as NdSbp per input and output.
struct NdSbpSignature {
  std::vector<NdSbp> in, out;
  bool operator==(const NdSbpSignature& o) const = default;
  std::string str() const;
};
std::vector<NdSbpSignature> combine_signatures(
    const std::vector<std::vector<SbpSignature>>& per_axis);

// The mesh axes on which input `i` of `def` streams (OpDef::streamed_inputs) instead of being
// converted from `from` to its signature's `to`: those where it is split along the streamed dim
// and `to` is broadcast, provided it is laid out as `to` on every other axis. Empty otherwise.
std::vector<int64_t> streamed_axes(const OpDef& def, size_t i, const NdSbp& from, const NdSbp& to);

}  // namespace ofl::internal
