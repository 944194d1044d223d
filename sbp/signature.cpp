#include "sbp/signature.h"

namespace ofl::internal {

namespace {
template <class T>
std::string join(const std::vector<T>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i].str();
  return s;
}
}  // namespace

std::string SbpSignature::str() const {
  return join(in) + " -> " + join(out);
}

std::string NdSbpSignature::str() const {
  return join(in) + " -> " + join(out);
}

SbpSignature all_broadcast_signature(size_t num_in, size_t num_out) {
  return {std::vector<Sbp>(num_in, Sbp::broadcast()), std::vector<Sbp>(num_out, Sbp::broadcast())};
}

std::vector<NdSbpSignature> combine_signatures(
    const std::vector<std::vector<SbpSignature>>& per_axis) {
  std::vector<std::vector<const SbpSignature*>> partial = {{}};
  for (const auto& axis : per_axis) {
    std::vector<std::vector<const SbpSignature*>> next;
    for (const auto& prefix : partial)
      for (const auto& sig : axis) {
        next.push_back(prefix);
        next.back().push_back(&sig);
      }
    partial = std::move(next);
  }
  std::vector<NdSbpSignature> out;
  out.reserve(partial.size());
  for (const auto& combo : partial) {
    if (combo.empty()) continue;
    NdSbpSignature s;
    const size_t ni = combo[0]->in.size(), no = combo[0]->out.size();
    for (size_t i = 0; i < ni; ++i) {
      std::vector<Sbp> axes;
      for (const auto* sig : combo) axes.push_back(sig->in[i]);
      s.in.emplace_back(std::move(axes));
    }
    for (size_t o = 0; o < no; ++o) {
      std::vector<Sbp> axes;
      for (const auto* sig : combo) axes.push_back(sig->out[o]);
      s.out.emplace_back(std::move(axes));
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<int64_t> streamed_axes(const OpDef& def, size_t i, const NdSbp& from, const NdSbp& to) {
  if (i >= 32 || !(def.streamed_inputs >> i & 1u) || from.size() != to.size()) return {};
  std::vector<int64_t> axes;
  for (size_t k = 0; k < to.size(); ++k) {
    if (from[k] == to[k]) continue;
    if (!(to[k].is_broadcast() && from[k].is_split() && from[k].axis() == def.streamed_dim))
      return {};
    axes.push_back(int64_t(k));
  }
  return axes;
}

}  // namespace ofl::internal
