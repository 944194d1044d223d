#include "ops/elementwise_sbp.h"

namespace ofl::internal::elementwise_sbp {

SbpSignature uniform(const SbpQuery& q, const Sbp& s) {
  return {std::vector<Sbp>(q.in.size(), s), std::vector<Sbp>(q.out.size(), s)};
}

SbpSignature one_input(const SbpQuery& q, size_t i, const Sbp& s, const Sbp& out) {
  SbpSignature sig{std::vector<Sbp>(q.in.size(), kB), std::vector<Sbp>(q.out.size(), out)};
  sig.in[i] = s;
  return sig;
}

Sigs broadcast_splits(const SbpQuery& q) {
  Sigs sigs;
  const Shape& out = q.out[0];
  for (int64_t d = 0; d < rank_of(out); ++d) {
    SbpSignature sig{{}, std::vector<Sbp>(q.out.size(), Sbp::split(d))};
    bool any_split = false;
    for (const Shape& in : q.in) {
      int64_t di = d - (rank_of(out) - rank_of(in));
      bool split = di >= 0 && in[di] == out[d];
      sig.in.push_back(split ? Sbp::split(di) : kB);
      any_split |= split;
    }
    if (any_split) sigs.push_back(std::move(sig));
  }
  return sigs;
}

Sigs identity(const SbpQuery& q) {
  Sigs sigs = broadcast_splits(q);
  for (const Sbp& p : {kPSum, kPMax, kPMin}) sigs.push_back(uniform(q, p));
  return sigs;
}

Sigs splits_except(const SbpQuery& q, int64_t axis) {
  Sigs sigs;
  for (int64_t d = 0; d < rank_of(q.in[0]); ++d)
    if (d != axis) sigs.push_back(uniform(q, Sbp::split(d)));
  return sigs;
}

namespace {

enum Partials : int {
  kNone = 0,
  kAllSum = 1,    // every input P(sum)
  kOneSum = 2,    // one input P(sum), the others B
  kFirstSum = 4,  // input 0 P(sum), the others B
  kAllMax = 8,
  kAllMin = 16,
  kSecondSum = 32,  // input 1 P(sum), the others B
};

template <int kPartials>
Sigs elementwise(const SbpQuery& q) {
  Sigs sigs = broadcast_splits(q);
  if (kPartials & kAllSum) sigs.push_back(uniform(q, kPSum));
  if (kPartials & kAllMax) sigs.push_back(uniform(q, kPMax));
  if (kPartials & kAllMin) sigs.push_back(uniform(q, kPMin));
  if (kPartials & kOneSum)
    for (size_t i = 0; i < q.in.size(); ++i) sigs.push_back(one_input(q, i, kPSum, kPSum));
  if ((kPartials & kFirstSum) && q.in.size() > 1) sigs.push_back(one_input(q, 0, kPSum, kPSum));
  if ((kPartials & kSecondSum) && q.in.size() > 1) sigs.push_back(one_input(q, 1, kPSum, kPSum));
  return sigs;
}

}  // namespace

const SbpRule kIdentity{"identity", identity};
const SbpRule kElementwise{"elementwise", elementwise<kNone>};
const SbpRule kLinearUnary{"linear_unary", elementwise<kAllSum>};
const SbpRule kMonotoneUnary{"monotone_unary", elementwise<kAllMax | kAllMin>};
const SbpRule kAddLike{"add_like", elementwise<kAllSum>};
const SbpRule kMulLike{"mul_like", elementwise<kOneSum>};
const SbpRule kDivLike{"div_like", elementwise<kFirstSum>};
const SbpRule kActivationGrad{"activation_grad", elementwise<kSecondSum>};
const SbpRule kMaximum{"maximum", elementwise<kAllMax>};
const SbpRule kMinimum{"minimum", elementwise<kAllMin>};

}  // namespace ofl::internal::elementwise_sbp
