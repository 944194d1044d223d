// P(op) -> S(i): reduce-scatter with the partial's op (sum, max or min).
#include "boxing/rule.h"

namespace ofl::internal::rules {
namespace {
bool applies(const Sbp& f, const Sbp& t) {
  return f.is_partial() && t.is_split();
}
void emit(const Sbp& f, const Sbp&, int64_t in, int64_t, BoxingStep& s) {
  s.kind = StepKind::kReduceScatter;
  s.op = f.op();
  s.bytes = in;
}
double seconds(const ClusterSpec& c, const std::vector<int>& g, const BoxingStep& s) {
  return c.reduce_scatter(g, double(s.bytes));
}
}  // namespace
extern const BoxingRule kPartialToSplit{"p_to_s", "P(op) -> S(i)", applies, emit, seconds};
}  // namespace ofl::internal::rules
