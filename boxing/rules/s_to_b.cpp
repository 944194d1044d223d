// S(i) -> B: all-gather the shards; each rank ends with the whole (sub-)tensor.
#include "boxing/rule.h"

namespace ofl::internal::rules {
namespace {
bool applies(const Sbp& f, const Sbp& t) {
  return f.is_split() && t.is_broadcast();
}
void emit(const Sbp&, const Sbp&, int64_t, int64_t out, BoxingStep& s) {
  s.kind = StepKind::kAllGather;
  s.bytes = out;
}
double seconds(const ClusterSpec& c, const std::vector<int>& g, const BoxingStep& s) {
  return c.all_gather(g, double(s.bytes));
}
}  // namespace
extern const BoxingRule kSplitToBroadcast{"s_to_b", "S(i) -> B", applies, emit, seconds};
}  // namespace ofl::internal::rules
