// P(op) -> B: all-reduce with the partial's op (sum, max or min).
#include "boxing/rule.h"

namespace ofl::internal::rules {
namespace {
bool applies(const Sbp& f, const Sbp& t) {
  return f.is_partial() && t.is_broadcast();
}
void emit(const Sbp& f, const Sbp&, int64_t in, int64_t, BoxingStep& s) {
  s.kind = StepKind::kAllReduce;
  s.op = f.op();
  s.bytes = in;
}
double seconds(const ClusterSpec& c, const std::vector<int>& g, const BoxingStep& s) {
  return c.all_reduce(g, double(s.bytes));
}
}  // namespace
extern const BoxingRule kPartialToBroadcast{"p_to_b", "P(op) -> B", applies, emit, seconds};
}  // namespace ofl::internal::rules
