#include "core/comm/communicator.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <utility>

#include "core/error.h"
#include "core/primitives.h"

namespace ofl::internal::comm {

namespace {
thread_local bool planned_collectives = false;
}  // namespace

PlannedCollectives::PlannedCollectives() : outer_(std::exchange(planned_collectives, true)) {}
PlannedCollectives::~PlannedCollectives() {
  planned_collectives = outer_;
}
bool PlannedCollectives::active() {
  return planned_collectives;
}

void Communicator::all_to_all_v_packed(const PackFn& pack, const std::vector<int64_t>& send_counts,
                                       Tensor& out, const std::vector<int64_t>& recv_counts) {
  const int64_t total = std::accumulate(send_counts.begin(), send_counts.end(), int64_t{0});
  Tensor buf = Tensor::empty({std::max<int64_t>(total, 0)}, out.dtype(), out.device());
  int64_t at = 0;
  for (size_t k = 0; k < send_counts.size() && send_counts[k] >= 0 && at < total; ++k) {
    if (send_counts[k] == 0) continue;
    Tensor into = narrow_view(buf, 0, at, std::min(send_counts[k], total - at));
    copy_into(into, pack(int(k), into));  // nothing to move when it packed into `into`
    at += send_counts[k];
  }
  all_to_all_v(buf, send_counts, out, recv_counts);
}

CallCheck call_check_from_env() {
  const char* v = std::getenv("OFL_COMM_CHECK");
  if (v && std::string(v) == "0") return CallCheck::kNone;
  if (v && std::string(v) == "all") return CallCheck::kAll;
  return CallCheck::kUnplanned;
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kProduct:
      return "product";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kAvg:
      return "avg";
  }
  return "?";
}

Communicator::Communicator(int rank, std::vector<int> ranks, std::string name)
    : rank_(rank), ranks_(std::move(ranks)), name_(std::move(name)) {}

std::shared_ptr<Communicator> Communicator::group(const std::vector<int>& members) {
  if (members.empty()) fail("new_group", "a group needs at least one rank");
  std::vector<int> sorted = members;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    fail("new_group", "rank list ", str_cat(shape_str(Shape(members.begin(), members.end()))),
         " repeats a rank");
  int my_index = -1;
  for (size_t i = 0; i < members.size(); ++i) {
    if (std::find(ranks_.begin(), ranks_.end(), members[i]) == ranks_.end())
      fail("new_group", "rank ", members[i], " is not in ", name_, " (ranks ",
           shape_str(Shape(ranks_.begin(), ranks_.end())), ")");
    if (members[i] == ranks_[rank_]) my_index = static_cast<int>(i);
  }
  if (my_index < 0)
    fail("new_group", "rank ", ranks_[rank_], " is not a member of ",
         shape_str(Shape(members.begin(), members.end())), "; only members may create a group");
  std::lock_guard<std::mutex> lock(groups_mu_);
  auto it = groups_.find(members);
  if (it != groups_.end()) return it->second;
  std::string name = "group[";
  for (size_t i = 0; i < members.size(); ++i) {
    if (i) name += ",";
    name += std::to_string(members[i]);
  }
  name += "]";
  auto g = make_group(members, my_index, name);
  g->set_timeout(timeout_);
  groups_[members] = g;
  return g;
}

void check_tensor(const char* op, const Communicator& c, const Tensor& t) {
  if (!t.defined()) fail(op, "got an undefined tensor on ", c.name());
  if (!t.is_contiguous())
    fail(op, "needs a contiguous tensor, got shape ", shape_str(t.shape()), " with strides ",
         shape_str(t.strides()), " on ", c.name());
}

void check_counts(const char* op, const Communicator& c, const std::vector<int64_t>& counts,
                  int64_t expected_total, const Tensor& t) {
  if (static_cast<int>(counts.size()) != c.size())
    fail(op, "got ", counts.size(), " counts for the ", c.size(), " ranks of ", c.name());
  for (int64_t n : counts)
    if (n < 0) fail(op, "negative count ", n, " on ", c.name());
  int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  if (total != expected_total)
    fail(op, "counts sum to ", total, " but the tensor of shape ", shape_str(t.shape()), " holds ",
         expected_total, " elements on ", c.name());
}

void check_peer(const char* op, const Communicator& c, int peer, const char* what) {
  if (peer < 0 || peer >= c.size())
    fail(op, what, " ", peer, " is out of range for ", c.name(), " of size ", c.size());
}

namespace {
int global_rank_of(const Communicator& c) {
  return c.ranks()[size_t(c.rank())];
}
}  // namespace

void check_blocks(const char* op, const Communicator& c, const char* whole_side,
                  const Tensor& whole, const char* block_side, const Tensor& block) {
  if (whole.numel() != block.numel() * c.size())
    fail(op, whole_side, " ", whole.str(), " must hold ", c.size(), " x ", block.numel(),
         " elements for ", block_side, " ", block.str(), " on ", c.name());
}

void check_own_count(const char* op, const Communicator& c, const std::vector<int64_t>& counts,
                     const char* side, const Tensor& t) {
  const int64_t own = counts[size_t(c.rank())];
  if (t.numel() != own)
    fail(op, side, " ", t.str(), " holds ", t.numel(), " elements but counts[", c.rank(), "] is ",
         own, " on ", c.name());
}

void check_self_counts(const char* op, const Communicator& c,
                       const std::vector<int64_t>& send_counts,
                       const std::vector<int64_t>& recv_counts) {
  const size_t me = size_t(c.rank());
  if (send_counts[me] != recv_counts[me])
    fail(op, "rank ", global_rank_of(c), " sends itself ", send_counts[me],
         " elements but expects ", recv_counts[me], " on ", c.name());
}

void check_not_self(const char* op, const Communicator& c, int peer, const char* verb) {
  if (peer == c.rank())
    fail(op, "rank ", global_rank_of(c), " cannot ", verb, " itself on ", c.name());
}

void send_recv(Communicator& c, const Tensor& out, int dst, Tensor& in, int src, int tag) {
  if (c.rank() % 2 == 0) {
    c.send(out, dst, tag);
    c.recv(in, src, tag);
  } else {
    c.recv(in, src, tag);
    c.send(out, dst, tag);
  }
}

namespace {

// to's elements become from's in row-major order (both contiguous, one size), on any device.
void copy_elements(const Tensor& from, Tensor& to) {
  copy_into(to, reshape_view(from, to.shape()));
}

// One rank: every collective's result is its own input.
class LocalCommunicator : public Communicator {
 public:
  LocalCommunicator() : Communicator(0, {0}, "world") {}
  void all_reduce(Tensor& t, ReduceOp) override { check_tensor("all_reduce", *this, t); }
  void all_gather(const Tensor& in, Tensor& out) override { same("all_gather", in, out); }
  void all_gather_v(const Tensor& in, Tensor& out, const std::vector<int64_t>& counts) override {
    check_counts("all_gather_v", *this, counts, out.numel(), out);
    same("all_gather_v", in, out);
  }
  void reduce_scatter(const Tensor& in, Tensor& out, ReduceOp) override {
    same("reduce_scatter", in, out);
  }
  void reduce_scatter_v(const Tensor& in, Tensor& out, const std::vector<int64_t>& counts,
                        ReduceOp) override {
    check_counts("reduce_scatter_v", *this, counts, in.numel(), in);
    same("reduce_scatter_v", in, out);
  }
  void all_to_all(const Tensor& in, Tensor& out) override { same("all_to_all", in, out); }
  void all_to_all_v(const Tensor& in, const std::vector<int64_t>&, Tensor& out,
                    const std::vector<int64_t>&) override {
    same("all_to_all_v", in, out);
  }
  void broadcast(Tensor& t, int root) override { check_peer("broadcast", *this, root, "root"); }
  void reduce(Tensor& t, int root, ReduceOp) override { check_peer("reduce", *this, root, "root"); }
  void gather(const Tensor& in, Tensor& out, int root, const std::vector<int64_t>&) override {
    check_peer("gather", *this, root, "root");
    same("gather", in, out);
  }
  void scatter(const Tensor& in, Tensor& out, int root, const std::vector<int64_t>&) override {
    check_peer("scatter", *this, root, "root");
    same("scatter", in, out);
  }
  void send(const Tensor&, int dst, int) override {
    fail("send", "a group of one rank has no peer to send to");
  }
  void recv(Tensor&, int src, int) override {
    fail("recv", "a group of one rank has no peer to receive from");
  }
  void barrier() override {}

 protected:
  std::shared_ptr<Communicator> make_group(const std::vector<int>&, int,
                                           const std::string&) override {
    return std::make_shared<LocalCommunicator>();
  }

 private:
  void same(const char* op, const Tensor& in, Tensor& out) {
    check_tensor(op, *this, in);
    check_tensor(op, *this, out);
    if (in.numel() != out.numel() || in.dtype() != out.dtype())
      fail(op, "input ", in.str(), " and output ", out.str(), " differ on a group of one rank");
    if (in.raw_data() != out.raw_data()) copy_elements(in, out);
  }
};

}  // namespace

std::shared_ptr<Communicator> make_local_communicator() {
  return std::make_shared<LocalCommunicator>();
}

}  // namespace ofl::internal::comm
