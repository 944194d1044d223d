// S(i) -> P(op): each rank holds the full-size tensor with its shard in place and the rest
// filled with op's identity (0 for sum, lowest for max, highest for min): reducing gives back
// the logical tensor.
#include "boxing/rule.h"

namespace ofl::internal::rules {
namespace {
bool applies(const Sbp& f, const Sbp& t) {
  return f.is_split() && t.is_partial();
}
void emit(const Sbp&, const Sbp& t, int64_t, int64_t out, BoxingStep& s) {
  s.kind = StepKind::kLocalPad;
  s.op = t.op();
  s.bytes = out;
}
double seconds(const ClusterSpec& c, const std::vector<int>&, const BoxingStep& s) {
  return c.local(double(s.bytes));  // fill + copy the shard in
}
}  // namespace
extern const BoxingRule kSplitToPartial{"s_to_p", "S(i) -> P(op)", applies, emit, seconds};
}  // namespace ofl::internal::rules
