// B -> P(sum): the group's first rank keeps the data, the others zero theirs.
// B -> P(max|min): every rank keeps its copy (x op x == x), so nothing moves.
#include "boxing/rule.h"

namespace ofl::internal::rules {
namespace {
bool applies(const Sbp& f, const Sbp& t) {
  return f.is_broadcast() && t.is_partial();
}
void emit(const Sbp&, const Sbp& t, int64_t in, int64_t, BoxingStep& s) {
  s.kind = StepKind::kLocalZeroFill;
  s.op = t.op();
  s.bytes = t.op() == PartialOp::kSum ? in : 0;
}
double seconds(const ClusterSpec& c, const std::vector<int>&, const BoxingStep& s) {
  return c.local(double(s.bytes));  // write zeros
}
}  // namespace
extern const BoxingRule kBroadcastToPartial{"b_to_p", "B -> P(op)", applies, emit, seconds};
}  // namespace ofl::internal::rules
