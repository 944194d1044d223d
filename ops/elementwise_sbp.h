// The SBP rules of the elementwise family, which ops of several files declare (unary, binary,
// in-place, optimizer and layout ops), and the helpers every op's own rule is written with. A
// rule lists an op's valid 1-d signatures from logical shapes and typed attributes; the executor
// (global/) picks among them by cost. An op's own rule sits beside its row in ops/<family>.cpp.
// Composite ops (linear, the losses, attention, mean, ...) declare none: they run as their
// parts, each with its own rule.
#pragma once
#include <cstdint>
#include <vector>

#include "sbp/signature.h"

namespace ofl::internal::elementwise_sbp {

using Sigs = std::vector<SbpSignature>;
inline const Sbp kB = Sbp::broadcast();
inline const Sbp kPSum = Sbp::partial(PartialOp::kSum);
inline const Sbp kPMax = Sbp::partial(PartialOp::kMax);
inline const Sbp kPMin = Sbp::partial(PartialOp::kMin);

inline int64_t rank_of(const Shape& s) {
  return static_cast<int64_t>(s.size());
}

// Every input and output with the same Sbp.
SbpSignature uniform(const SbpQuery& q, const Sbp& s);
// One input at `i` with `s`, the others B, every output `out`.
SbpSignature one_input(const SbpQuery& q, size_t i, const Sbp& s, const Sbp& out);
// Splits of output 0's axes through broadcasting inputs (aligned on the right).
Sigs broadcast_splits(const SbpQuery& q);
// Every layout passes through: the splits of broadcast_splits and each partial.
Sigs identity(const SbpQuery& q);
// The same split on every input and output, of each axis of input 0 but `axis`.
Sigs splits_except(const SbpQuery& q, int64_t axis);

// Shape-preserving copies (clone, contiguous, detach): every layout passes through.
extern const SbpRule kIdentity;
// Elementwise with broadcasting: the same split on every input that has the output's axis
// (B where an input broadcasts it). Variants add the partial signatures that are exact:
extern const SbpRule kElementwise;     // splits only (comparisons, pow, non-monotone maps)
extern const SbpRule kLinearUnary;     // + P(sum) -> P(sum)                        (neg, to)
extern const SbpRule kMonotoneUnary;   // + P(max|min) -> P(max|min)       (relu, exp, floor)
extern const SbpRule kAddLike;         // + all P(sum) -> P(sum)                  (add, sub)
extern const SbpRule kMulLike;         // + one input P(sum), the rest B -> P(sum)      (mul)
extern const SbpRule kDivLike;         // + input 0 P(sum), the rest B -> P(sum)        (div)
extern const SbpRule kActivationGrad;  // + input 1 P(sum), the rest B -> P(sum)  (f'(x) * grad)
extern const SbpRule kMaximum;         // + all P(max) -> P(max)
extern const SbpRule kMinimum;         // + all P(min) -> P(min)

}  // namespace ofl::internal::elementwise_sbp
