#include "boxing/rule.h"

namespace ofl::internal {

const std::vector<const BoxingRule*>& rule_table() {
  static const std::vector<const BoxingRule*> table = {
      &rules::kIdentity,           &rules::kSplitToBroadcast, &rules::kSplitToSplit,
      &rules::kPartialToBroadcast, &rules::kPartialToSplit,   &rules::kBroadcastToSplit,
      &rules::kBroadcastToPartial, &rules::kSplitToPartial,
  };
  return table;
}

const BoxingRule* find_rule(const Sbp& from, const Sbp& to) {
  for (const BoxingRule* r : rule_table())
    if (r->applies(from, to)) return r;
  return nullptr;
}

}  // namespace ofl::internal
