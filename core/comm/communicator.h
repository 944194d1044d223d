// Collective communication over a group of ranks. It knows tensors and ranks, nothing of SBP.
// Backends: Gloo (CPU tensors), NCCL (CUDA tensors, CUDA builds); a group of one needs none.
//
// Conventions: ranks passed to a communicator are ranks *within its group*; tensors are
// contiguous (non-contiguous inputs raise); every rank passes the same dtype; "v" variants
// take per-rank element counts, so uneven splits need no padding. Every call finishes within
// the timeout or raises ofl::internal::Error naming the group, the collective and the ranks that
// did not arrive.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/comm/store.h"
#include "core/tensor.h"

namespace ofl::internal::comm {

enum class ReduceOp { kSum, kProduct, kMax, kMin, kAvg };
const char* reduce_op_name(ReduceOp op);

// While one is alive on a thread, that thread's collectives are planned ones: boxing's, which
// follow from global metadata every rank agrees on (checked when the global tensor is made).
// They skip the call check (Gloo: one more allgather per collective, a round trip that cost
// 5 ms on 4 ranks sharing 2 cores) unless OFL_COMM_CHECK=all.
class PlannedCollectives {
 public:
  PlannedCollectives();
  ~PlannedCollectives();
  PlannedCollectives(const PlannedCollectives&) = delete;
  PlannedCollectives& operator=(const PlannedCollectives&) = delete;
  static bool active();

 private:
  bool outer_;
};

// What OFL_COMM_CHECK asks for: 0 no call check, all every collective's, otherwise (the
// default) the collectives that are not planned.
enum class CallCheck { kNone, kUnplanned, kAll };
CallCheck call_check_from_env();

class Communicator {
 public:
  virtual ~Communicator() = default;

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(ranks_.size()); }
  // Global ranks of the members, in group order.
  const std::vector<int>& ranks() const { return ranks_; }
  const std::string& name() const { return name_; }  // "world", "group[0,2]"
  Millis timeout() const { return timeout_; }
  virtual void set_timeout(Millis t) { timeout_ = t; }  // wrappers pass it on

  // In place on every rank.
  virtual void all_reduce(Tensor& t, ReduceOp op) = 0;
  // out holds size() * in.numel() elements: rank r's input at block r.
  virtual void all_gather(const Tensor& in, Tensor& out) = 0;
  // out holds sum(counts) elements: rank r's input (counts[r] elements) after ranks < r.
  virtual void all_gather_v(const Tensor& in, Tensor& out, const std::vector<int64_t>& counts) = 0;
  // in holds size() * out.numel() elements; rank r receives the reduction of block r.
  virtual void reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) = 0;
  virtual void reduce_scatter_v(const Tensor& in, Tensor& out, const std::vector<int64_t>& counts,
                                ReduceOp op) = 0;
  // in and out hold size() equal blocks; block j of in goes to rank j's block rank().
  virtual void all_to_all(const Tensor& in, Tensor& out) = 0;
  virtual void all_to_all_v(const Tensor& in, const std::vector<int64_t>& send_counts, Tensor& out,
                            const std::vector<int64_t>& recv_counts) = 0;
  // all_to_all_v whose send blocks are made on demand: pack(k, into) returns member k's block
  // (send_counts[k] elements of out's dtype, 1-d and contiguous): `into`, filled, or a view of
  // its own. This rank's own block is packed straight into out. A backend may pack one block
  // while the ones before are on their way; by default all are packed, then all_to_all_v runs.
  using PackFn = std::function<Tensor(int member, const Tensor& into)>;
  virtual void all_to_all_v_packed(const PackFn& pack, const std::vector<int64_t>& send_counts,
                                   Tensor& out, const std::vector<int64_t>& recv_counts);
  virtual void broadcast(Tensor& t, int root) = 0;
  // The reduction lands in t on root; other ranks' t is left as it was.
  virtual void reduce(Tensor& t, int root, ReduceOp op) = 0;
  // out (on root only) holds sum(counts) elements; counts empty means equal blocks.
  virtual void gather(const Tensor& in, Tensor& out, int root,
                      const std::vector<int64_t>& counts = {}) = 0;
  // in (on root only) holds sum(counts) elements; rank r receives block r into out.
  virtual void scatter(const Tensor& in, Tensor& out, int root,
                       const std::vector<int64_t>& counts = {}) = 0;
  virtual void send(const Tensor& t, int dst, int tag = 0) = 0;
  virtual void recv(Tensor& t, int src, int tag = 0) = 0;
  virtual void barrier() = 0;

  // The communicator over `members` (global ranks, a subset of this group's, in the order
  // given). Collective over the members only; cached, so asking again is free.
  std::shared_ptr<Communicator> group(const std::vector<int>& members);

 protected:
  Communicator(int rank, std::vector<int> ranks, std::string name);
  // Builds the backend communicator for a sub-group; called once per distinct member list.
  virtual std::shared_ptr<Communicator> make_group(const std::vector<int>& members, int my_index,
                                                   const std::string& name) = 0;

  int rank_;
  std::vector<int> ranks_;
  std::string name_;
  Millis timeout_ = default_timeout();

 private:
  std::mutex groups_mu_;
  std::map<std::vector<int>, std::shared_ptr<Communicator>> groups_;
};

// A group of one rank: every collective is a local copy (or nothing); no backend needed.
std::shared_ptr<Communicator> make_local_communicator();

// Argument checks shared by backends; each raises ofl::internal::Error naming the collective.
void check_tensor(const char* op, const Communicator& c, const Tensor& t);
void check_counts(const char* op, const Communicator& c, const std::vector<int64_t>& counts,
                  int64_t expected_total, const Tensor& t);
void check_peer(const char* op, const Communicator& c, int peer, const char* what);
// `whole` holds size() blocks of `block`'s elements: all_gather's output, reduce_scatter's input,
// gather's output and scatter's input on the root (`whole_side` and `block_side` name them).
void check_blocks(const char* op, const Communicator& c, const char* whole_side,
                  const Tensor& whole, const char* block_side, const Tensor& block);
// This rank's tensor on `side` holds its own entry of `counts` (the v-variants).
void check_own_count(const char* op, const Communicator& c, const std::vector<int64_t>& counts,
                     const char* side, const Tensor& t);
// all_to_all_v: what this rank sends itself is what it expects from itself.
void check_self_counts(const char* op, const Communicator& c,
                       const std::vector<int64_t>& send_counts,
                       const std::vector<int64_t>& recv_counts);
// A point-to-point peer is another rank (`verb`: "send to", "receive from").
void check_not_self(const char* op, const Communicator& c, int peer, const char* verb);

// Sends `out` to `dst` and receives `in` from `src` (ranks in c), under `tag`. Every member of a
// ring may do so at once: even members send first and odd ones receive first, so no send waits
// on a peer that is itself waiting to send.
void send_recv(Communicator& c, const Tensor& out, int dst, Tensor& in, int src, int tag);

}  // namespace ofl::internal::comm
