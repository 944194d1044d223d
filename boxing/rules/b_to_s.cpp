// B -> S(i): every rank already holds everything; keep (copy out) this rank's slice.
#include "boxing/rule.h"

namespace ofl::internal::rules {
namespace {
bool applies(const Sbp& f, const Sbp& t) {
  return f.is_broadcast() && t.is_split();
}
void emit(const Sbp&, const Sbp&, int64_t, int64_t out, BoxingStep& s) {
  s.kind = StepKind::kLocalSlice;
  s.bytes = out;
}
double seconds(const ClusterSpec& c, const std::vector<int>&, const BoxingStep& s) {
  return c.local(2.0 * double(s.bytes));  // read + write the slice
}
}  // namespace
extern const BoxingRule kBroadcastToSplit{"b_to_s", "B -> S(i)", applies, emit, seconds};
}  // namespace ofl::internal::rules
