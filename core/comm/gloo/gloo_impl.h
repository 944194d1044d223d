// Internals of the Gloo backend shared by its .cpp files (not part of the public API).
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gloo/rendezvous/context.h>
#include <gloo/transport/device.h>
#include <gloo/transport/unbound_buffer.h>

#include "core/comm/communicator.h"

namespace ofl::internal::comm::gloo_detail {

// c[i] = a[i] op b[i]; c may alias a or b element for element (Gloo's reduce signature).
using ReduceFn = void (*)(void* c, const void* a, const void* b, size_t n);
// The typed reduction for dtype; kAvg reduces as kSum (the caller divides afterwards).
ReduceFn reduce_fn(DType dtype, ReduceOp op);
// Raises ofl::internal::TypeError naming `op` when `reduce` cannot apply to dtype (avg of
// integers).
void check_reduce_op(const char* op, DType dtype, ReduceOp reduce);
// data[i] /= divisor for a floating dtype (the second half of avg).
void divide_in_place(void* data, int64_t n, DType dtype, int divisor);

// What a rank's communicators share: the store and the TCP device (listening on `host`).
struct GlooWorld {
  std::shared_ptr<Store> store;
  std::shared_ptr<gloo::transport::Device> device;
};

using Clock = std::chrono::steady_clock;

// How one rank calls a collective. Unless OFL_COMM_CHECK=0, collectives first compare these
// across ranks, so mismatched calls raise on every rank instead of hanging or aborting in Gloo.
struct CallSignature {
  const char* op = "";
  int64_t dtype = -1;  // -1: no tensor (barrier)
  int64_t numel = -1;  // elements every rank must agree on; -1: none
  int64_t root = -1;
  int64_t reduce = -1;
  std::vector<int64_t> counts = {};  // v-variants: the same on every rank
  // all_to_all_v: rank i's send_counts[j] must equal rank j's recv_counts[i].
  std::vector<int64_t> send_counts = {}, recv_counts = {};
};

class GlooCommunicator final : public Communicator {
 public:
  // Connects a fresh Gloo context over `ranks` (global ranks; this rank is ranks[my_index]).
  // `op` names the caller in rendezvous errors.
  GlooCommunicator(const char* op, std::shared_ptr<GlooWorld> world, int my_index,
                   std::vector<int> ranks, std::string name, Millis timeout);
  ~GlooCommunicator() override;

  void all_reduce(Tensor& t, ReduceOp op) override;
  void all_gather(const Tensor& in, Tensor& out) override;
  void all_gather_v(const Tensor& in, Tensor& out, const std::vector<int64_t>& counts) override;
  void reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) override;
  void reduce_scatter_v(const Tensor& in, Tensor& out, const std::vector<int64_t>& counts,
                        ReduceOp op) override;
  void all_to_all(const Tensor& in, Tensor& out) override;
  void all_to_all_v(const Tensor& in, const std::vector<int64_t>& send_counts, Tensor& out,
                    const std::vector<int64_t>& recv_counts) override;
  // In groups of at most direct_ranks_, each block is sent as soon as it is packed, while the
  // next is packed.
  void all_to_all_v_packed(const PackFn& pack, const std::vector<int64_t>& send_counts, Tensor& out,
                           const std::vector<int64_t>& recv_counts) override;
  void broadcast(Tensor& t, int root) override;
  void reduce(Tensor& t, int root, ReduceOp op) override;
  void gather(const Tensor& in, Tensor& out, int root,
              const std::vector<int64_t>& counts = {}) override;
  void scatter(const Tensor& in, Tensor& out, int root,
               const std::vector<int64_t>& counts = {}) override;
  void send(const Tensor& t, int dst, int tag = 0) override;
  void recv(Tensor& t, int src, int tag = 0) override;
  void barrier() override;

 protected:
  std::shared_ptr<Communicator> make_group(const std::vector<int>& members, int my_index,
                                           const std::string& name) override;

 private:
  // Runs the communication of one collective. Collectives are numbered alike on every rank; on
  // a Gloo failure the ranks compare numbers through the store to name who did not arrive.
  void collective(const CallSignature& call, const std::function<void()>& body);
  // Raises on every rank when the ranks' signatures differ (see CallCheck).
  void check_same_call(const CallSignature& call);
  // Runs one send or recv with `peer`; failures name the peer and the tag.
  void point_to_point(const char* op, int peer, int tag, const std::function<void()>& body);
  [[noreturn]] void collective_failed(const char* op, uint64_t seq, const std::string& what);
  void close_connections() noexcept;
  void check_usable(const char* op) const;
  void check_cpu(const char* op, const Tensor& t) const;
  void check_same_dtype(const char* op, const Tensor& in, const Tensor& out) const;

  std::unique_ptr<gloo::transport::UnboundBuffer> buffer(const void* p, size_t nbytes);
  void wait_recv(gloo::transport::UnboundBuffer& b, Clock::time_point deadline);
  void wait_send(gloo::transport::UnboundBuffer& b, Clock::time_point deadline);
  // Reduce-scatter of `counts`-sized blocks: direct in groups of at most kDirectRanks, else
  // along the ring (send/recv of unbound buffers).
  void reduce_scatter_blocks(const char* name, const Tensor& in, Tensor& out,
                             const std::vector<int64_t>& counts, ReduceOp op);
  void direct_reduce_scatter(const char* name, const Tensor& in, Tensor& out,
                             const std::vector<int64_t>& counts, ReduceOp op);
  void ring_reduce_scatter(const char* op_name, const Tensor& in, Tensor& out,
                           const std::vector<int64_t>& counts, ReduceOp op);
  // Every rank's block sent straight to every other rank, all at once.
  void direct_all_gather_v(const char* name, const Tensor& in, Tensor& out,
                           const std::vector<int64_t>& counts);
  // Gather / scatter of uneven blocks as direct sends to / from root.
  void gather_blocks(const Tensor& in, Tensor& out, int root, const std::vector<int64_t>& counts);
  void scatter_blocks(const Tensor& in, Tensor& out, int root, const std::vector<int64_t>& counts);

  std::shared_ptr<GlooWorld> world_;
  std::shared_ptr<Store> store_;  // this communicator's own key namespace
  std::shared_ptr<gloo::rendezvous::Context> ctx_;
  uint64_t seq_ = 0;  // collectives started
  // A fresh Gloo tag per collective (the same on every rank, which run them in the same order),
  // so one call's messages never wait behind the previous call's on the same slot.
  uint32_t op_tag() const { return static_cast<uint32_t>(seq_ & 0x3fffffff); }
  CallCheck check_calls_;  // from OFL_COMM_CHECK
  // Groups of at most this many ranks reduce-scatter and all-gather directly (every rank sends
  // each peer its part at once: one round, n - 1 messages in flight) rather than along a ring
  // (n - 1 rounds of one message). On one host the rounds are what costs; the ring's bounded
  // fan-in is for larger groups over a network. All-gathers of 16-64 MB on 4 local ranks took
  // about 15% less time. OFL_COMM_DIRECT_RANKS sets it (default 8; 1: always the ring).
  int direct_ranks_;
  std::string broken_;  // why the Gloo context is unusable, after a failure
};

}  // namespace ofl::internal::comm::gloo_detail
