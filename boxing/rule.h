// A 1-d boxing rule: the transition it serves on one mesh axis (or merged axes), the step it
// emits and that step's cost. One file per rule under boxing/rules/; rule_table() tries them in
// a fixed order and the first that applies wins (tinygrad schedule/multi.py's table shape).
#pragma once
#include <cstdint>
#include <vector>

#include "boxing/plan.h"
#include "sbp/cluster_spec.h"
#include "sbp/sbp.h"

namespace ofl::internal {

struct BoxingRule {
  const char* name;    // the file under boxing/rules/: "s_to_b"
  const char* serves;  // "S(i) -> B"
  bool (*applies)(const Sbp& from, const Sbp& to);
  // Fills kind, op and bytes from the largest per-rank buffer before and after the step.
  void (*emit)(const Sbp& from, const Sbp& to, int64_t in_bytes, int64_t out_bytes,
               BoxingStep& step);
  // Seconds for one sub-group of global ranks; the search takes the slowest group.
  double (*seconds)(const ClusterSpec& cluster, const std::vector<int>& group,
                    const BoxingStep& step);
};

namespace rules {
extern const BoxingRule kIdentity;
extern const BoxingRule kSplitToBroadcast;
extern const BoxingRule kSplitToSplit;
extern const BoxingRule kPartialToBroadcast;
extern const BoxingRule kPartialToSplit;
extern const BoxingRule kBroadcastToSplit;
extern const BoxingRule kBroadcastToPartial;
extern const BoxingRule kSplitToPartial;
}  // namespace rules

// The rules in the order they are tried.
const std::vector<const BoxingRule*>& rule_table();
// The first rule that applies to from -> to, or nullptr (e.g. P(sum) -> P(max): go through B).
const BoxingRule* find_rule(const Sbp& from, const Sbp& to);

}  // namespace ofl::internal
