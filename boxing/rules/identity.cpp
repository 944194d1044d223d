// X -> X: nothing to do. The search never emits it; it documents that the table is total here.
#include "boxing/rule.h"

namespace ofl::internal::rules {
namespace {
bool applies(const Sbp& f, const Sbp& t) {
  return f == t;
}
void emit(const Sbp&, const Sbp&, int64_t in, int64_t, BoxingStep& s) {
  s.bytes = 0;
}
double seconds(const ClusterSpec&, const std::vector<int>&, const BoxingStep&) {
  return 0;
}
}  // namespace
extern const BoxingRule kIdentity{"identity", "X -> X", applies, emit, seconds};
}  // namespace ofl::internal::rules
