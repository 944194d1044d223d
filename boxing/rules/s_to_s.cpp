// S(i) -> S(j), i != j: all-to-all; rank r sends block j=q of its shard to rank q.
#include <algorithm>

#include "boxing/rule.h"

namespace ofl::internal::rules {
namespace {
bool applies(const Sbp& f, const Sbp& t) {
  return f.is_split() && t.is_split() && f.axis() != t.axis();
}
void emit(const Sbp&, const Sbp&, int64_t in, int64_t out, BoxingStep& s) {
  s.kind = StepKind::kAllToAll;
  s.bytes = std::max(in, out);
}
double seconds(const ClusterSpec& c, const std::vector<int>& g, const BoxingStep& s) {
  return c.all_to_all(g, double(s.bytes));
}
}  // namespace
extern const BoxingRule kSplitToSplit{"s_to_s", "S(i) -> S(j)", applies, emit, seconds};
}  // namespace ofl::internal::rules
