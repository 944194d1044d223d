// By default before each collective that is not planned (PlannedCollectives: boxing's), the
// ranks exchange what they are about to call (OFL_COMM_CHECK=0: never, =all: before every one), so
// a mismatch (another collective, dtype, size, root or counts) raises on every rank with each
// rank's call, instead of a hang, garbage or an abort inside Gloo. Costs one allgather of seven
// integers (all_to_all_v: a second one of its counts).
#include <cstdint>  // first: Gloo's types.h uses uint8_t without including it

#include <gloo/allgather.h>

#include <cstring>
#include <sstream>

#include "core/comm/gloo/gloo_impl.h"
#include "core/error.h"

namespace ofl::internal::comm::gloo_detail {
namespace {

const char* const kCollectives[] = {"all_reduce",     "all_gather",       "all_gather_v",
                                    "reduce_scatter", "reduce_scatter_v", "all_to_all",
                                    "all_to_all_v",   "broadcast",        "reduce",
                                    "gather",         "scatter",          "barrier"};
constexpr int kNumCollectives = sizeof(kCollectives) / sizeof(kCollectives[0]);

int64_t op_code(const char* op) {
  for (int i = 0; i < kNumCollectives; ++i)
    if (std::strcmp(op, kCollectives[i]) == 0) return i;
  OFL_CHECK(false, "unknown collective ", op);
  return -1;
}

std::string list(const int64_t* v, int n) {
  std::ostringstream os;
  os << "[";
  for (int i = 0; i < n; ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

// row: op, dtype, numel, root, reduce op.
std::string describe(const int64_t* row) {
  std::string s = row[0] >= 0 && row[0] < kNumCollectives ? kCollectives[row[0]] : "?";
  if (row[1] >= 0 && row[1] < kNumDTypes) s += str_cat(" ", dtype_name(static_cast<DType>(row[1])));
  if (row[2] >= 0) s += str_cat(" of ", row[2], " elements");
  if (row[3] >= 0) s += str_cat(" from/to root ", row[3]);
  if (row[4] >= 0) s += str_cat(" (", reduce_op_name(static_cast<ReduceOp>(row[4])), ")");
  return s;
}

}  // namespace

void GlooCommunicator::check_same_call(const CallSignature& call) {
  const int n = size();
  auto all_gather_ints = [&](std::vector<int64_t> mine) {
    std::vector<int64_t> all(mine.size() * n);
    gloo::AllgatherOptions o(ctx_);
    o.setTag(op_tag());
    o.setInput<int64_t>(mine.data(), mine.size());
    o.setOutput<int64_t>(all.data(), all.size());
    o.setTimeout(timeout());
    gloo::allgather(o);
    return all;
  };
  // One allgather of a small header per collective; the counts of the v-variants travel as a
  // hash, and only when the hashes differ do the ranks gather the lists to say how.
  uint64_t hash = 1469598103934665603ull;  // FNV-1a over the counts
  for (int64_t c : call.counts) hash = (hash ^ uint64_t(c)) * 1099511628211ull;
  constexpr int kFields = 7;
  auto rows = all_gather_ints({op_code(call.op), call.dtype, call.numel, call.root, call.reduce,
                               static_cast<int64_t>(call.counts.size()), int64_t(hash)});
  bool same = true;
  for (int r = 1; r < n; ++r)
    same = same && std::equal(rows.begin(), rows.begin() + kFields - 1, rows.begin() + r * kFields);
  if (!same) {
    std::string calls;
    for (int r = 0; r < n; ++r)
      calls += str_cat(r ? "; " : "", "rank ", ranks_[r], ": ", describe(&rows[r * kFields]));
    fail(call.op, "on ", name_, ": ranks disagree on the call (", calls, ")");
  }
  bool same_counts = true;
  for (int r = 1; r < n; ++r) same_counts = same_counts && rows[r * kFields + 6] == rows[6];
  // Every rank now knows the others pass counts of the same length (the group size).
  if (!same_counts) {
    auto counts = all_gather_ints(call.counts);
    std::string lists;
    for (int q = 0; q < n; ++q)
      lists += str_cat(q ? "; " : "", "rank ", ranks_[q], ": ", list(&counts[q * n], n));
    fail(call.op, "on ", name_, ": ranks pass different counts (", lists, ")");
  }
  if (!call.send_counts.empty()) {
    std::vector<int64_t> mine = call.send_counts;
    mine.insert(mine.end(), call.recv_counts.begin(), call.recv_counts.end());
    auto m = all_gather_ints(mine);  // row i: rank i's send counts, then its recv counts
    std::string bad;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        if (m[i * 2 * n + j] != m[j * 2 * n + n + i])
          bad += str_cat(bad.empty() ? "" : "; ", "rank ", ranks_[i], " sends rank ", ranks_[j],
                         " ", m[i * 2 * n + j], " elements, which expects ", m[j * 2 * n + n + i]);
    if (!bad.empty()) fail(call.op, "on ", name_, ": send and receive counts disagree (", bad, ")");
  }
}

}  // namespace ofl::internal::comm::gloo_detail
