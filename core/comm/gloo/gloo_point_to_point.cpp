// What the Gloo backend builds from send/recv of unbound buffers: tagged send/recv, the ring
// reduce-scatter (even and uneven blocks), and gather/scatter of uneven blocks.
#include <gloo/transport/unbound_buffer.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/comm/gloo/gloo_impl.h"
#include "core/comm/gloo/ring_plan.h"
#include "core/error.h"
#include "core/primitives.h"

namespace ofl::internal::comm::gloo_detail {
namespace {

// Gloo's own collectives use slot prefixes 0x01-0x08; user tags live below 2^31 (prefix 0).
constexpr uint64_t kRingSlot = uint64_t{0x40} << 56;
constexpr uint64_t kGatherSlot = uint64_t{0x41} << 56;
constexpr uint64_t kScatterSlot = uint64_t{0x42} << 56;
constexpr uint64_t kDirectSlot = uint64_t{0x43} << 56;

size_t nbytes(const Tensor& t) {
  return static_cast<size_t>(t.numel()) * itemsize(t.dtype());
}

std::vector<int64_t> offsets_of(const std::vector<int64_t>& counts) {
  std::vector<int64_t> off(counts.size(), 0);
  std::partial_sum(counts.begin(), counts.end() - 1, off.begin() + 1);
  return off;
}

uint64_t data_slot(int tag) {
  return static_cast<uint64_t>(tag);
}
uint64_t header_slot(int tag) {
  return (uint64_t{0x43} << 56) | static_cast<uint64_t>(tag);
}

void check_tag(const char* op, const Communicator& c, int tag) {
  if (tag < 0) fail(op, "tag must be non-negative, got ", tag, " on ", c.name());
}

}  // namespace

// A message is a 16-byte header (dtype, numel) on its own slot, then the data under the tag.
// The receiver checks the header first: Gloo aborts the process when more bytes arrive than
// the receive posted, and silently half-fills the buffer when fewer do.
void GlooCommunicator::send(const Tensor& t, int dst, int tag) {
  const char* name = "send";
  check_cpu(name, t);
  check_peer(name, *this, dst, "destination");
  check_tag(name, *this, tag);
  check_not_self(name, *this, dst, "send to");
  point_to_point(name, dst, tag, [&] {
    const auto deadline = Clock::now() + timeout();
    int64_t header[2] = {static_cast<int64_t>(t.dtype()), t.numel()};
    auto h = buffer(header, sizeof header);
    h->send(dst, header_slot(tag));
    std::unique_ptr<gloo::transport::UnboundBuffer> b;
    if (t.numel()) {
      b = buffer(t.raw_data(), nbytes(t));
      b->send(dst, data_slot(tag));
    }
    wait_send(*h, deadline);
    if (b) wait_send(*b, deadline);
  });
}

void GlooCommunicator::recv(Tensor& t, int src, int tag) {
  const char* name = "recv";
  check_cpu(name, t);
  check_peer(name, *this, src, "source");
  check_tag(name, *this, tag);
  check_not_self(name, *this, src, "receive from");
  point_to_point(name, src, tag, [&] {
    const auto deadline = Clock::now() + timeout();
    int64_t header[2] = {-1, -1};
    auto h = buffer(header, sizeof header);
    h->recv(src, header_slot(tag));
    wait_recv(*h, deadline);
    const bool known_dtype = header[0] >= 0 && header[0] < kNumDTypes;
    if (known_dtype && header[0] == static_cast<int64_t>(t.dtype()) && header[1] == t.numel()) {
      if (!t.numel()) return;
      auto b = buffer(t.raw_data(), nbytes(t));
      b->recv(src, data_slot(tag));
      return wait_recv(*b, deadline);
    }
    // Take the message anyway so the sender completes and both ranks stay in step.
    const size_t sent = known_dtype && header[1] > 0 ? header[1] * itemsize(DType(header[0])) : 0;
    if (sent) {
      std::unique_ptr<char[]> sink(new char[sent]);
      auto b = buffer(sink.get(), sent);
      b->recv(src, data_slot(tag));
      wait_recv(*b, deadline);
    }
    fail(name, "on ", name_, ": rank ", src, " sent ", header[1], " elements of ",
         known_dtype ? dtype_name(DType(header[0])) : "an unknown dtype", " with tag ", tag,
         " but this rank expects ", t.str());
  });
}

void GlooCommunicator::reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) {
  const char* name = "reduce_scatter";
  check_cpu(name, in);
  check_cpu(name, out);
  check_blocks(name, *this, "input", in, "output", out);
  reduce_scatter_blocks(name, in, out, std::vector<int64_t>(size(), out.numel()), op);
}

void GlooCommunicator::reduce_scatter_v(const Tensor& in, Tensor& out,
                                        const std::vector<int64_t>& counts, ReduceOp op) {
  const char* name = "reduce_scatter_v";
  check_cpu(name, in);
  check_cpu(name, out);
  check_counts(name, *this, counts, in.numel(), in);
  check_own_count(name, *this, counts, "output", out);
  reduce_scatter_blocks(name, in, out, counts, op);
}

void GlooCommunicator::reduce_scatter_blocks(const char* name, const Tensor& in, Tensor& out,
                                             const std::vector<int64_t>& counts, ReduceOp op) {
  check_same_dtype(name, in, out);
  check_reduce_op(name, in.dtype(), op);
  if (in.numel() == 0) return;
  if (size() == 1) {
    if (out.raw_data() != in.raw_data()) std::memcpy(out.raw_data(), in.raw_data(), nbytes(in));
    return;
  }
  if (size() <= direct_ranks_)
    direct_reduce_scatter(name, in, out, counts, op);
  else
    ring_reduce_scatter(name, in, out, counts, op);
  if (op == ReduceOp::kAvg) divide_in_place(out.raw_data(), out.numel(), out.dtype(), size());
}

// Each rank sends block k of its input straight to rank k, all at once, and reduces its own
// block's n - 1 parts as they arrive: one round instead of the ring's n - 1.
void GlooCommunicator::direct_reduce_scatter(const char* name, const Tensor& in, Tensor& out,
                                             const std::vector<int64_t>& counts, ReduceOp op) {
  const size_t item = itemsize(in.dtype());
  const auto off = offsets_of(counts);
  const char* src = static_cast<const char*>(in.raw_data());
  const size_t mine = counts[rank_] * item;
  Tensor scratch_t = Tensor::empty({static_cast<int64_t>((size() - 1) * mine)}, DType::kUInt8);
  char* scratch = static_cast<char*>(scratch_t.raw_data());
  const ReduceFn fn = reduce_fn(in.dtype(), op);
  collective({.op = name,
              .dtype = static_cast<int64_t>(in.dtype()),
              .numel = in.numel(),
              .reduce = static_cast<int64_t>(op),
              .counts = counts},
             [&] {
               const auto deadline = Clock::now() + timeout();
               auto input = buffer(src, nbytes(in));
               std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> parts;
               for (int k = 1; k < size() && mine; ++k) {
                 parts.push_back(buffer(scratch + (k - 1) * mine, mine));
                 parts.back()->recv((rank_ + size() - k) % size(), kDirectSlot, 0, mine);
               }
               int sends = 0;
               for (int k = 1; k < size(); ++k) {
                 const int r = (rank_ + k) % size();
                 if (counts[r] == 0) continue;
                 input->send(r, kDirectSlot, off[r] * item, counts[r] * item);
                 ++sends;
               }
               const void* own = src + off[rank_] * item;
               for (auto& part : parts) {
                 wait_recv(*part, deadline);
                 fn(out.raw_data(), own, part->ptr, counts[rank_]);
                 own = out.raw_data();
               }
               while (sends--) wait_send(*input, deadline);
             });
}

// Each rank sends (size - 1) / size of the data once, in blocks of counts[b] elements; the
// reduction of block b happens along the ring ending at rank b (see ring_plan.h).
void GlooCommunicator::ring_reduce_scatter(const char* name, const Tensor& in, Tensor& out,
                                           const std::vector<int64_t>& counts, ReduceOp op) {
  const size_t item = itemsize(in.dtype());
  const auto off = offsets_of(counts);
  const char* src = static_cast<const char*>(in.raw_data());
  const size_t max_bytes = *std::max_element(counts.begin(), counts.end()) * item;
  // From the caching allocator: a fresh 2 x 32 MB block per call costs ~16k page faults.
  Tensor scratch_t = Tensor::empty({static_cast<int64_t>(2 * max_bytes)}, DType::kUInt8);
  char* scratch = static_cast<char*>(scratch_t.raw_data());
  const ReduceFn fn = reduce_fn(in.dtype(), op);
  collective({.op = name,
              .dtype = static_cast<int64_t>(in.dtype()),
              .numel = in.numel(),
              .reduce = static_cast<int64_t>(op),
              .counts = counts},
             [&] {
               const auto deadline = Clock::now() + timeout();
               const int next = (rank_ + 1) % size(), prev = (rank_ + size() - 1) % size();
               auto input = buffer(src, nbytes(in));
               std::unique_ptr<gloo::transport::UnboundBuffer> partial[2] = {
                   buffer(scratch, max_bytes), buffer(scratch + max_bytes, max_bytes)};
               const auto plan = ring_reduce_scatter_plan(rank_, size());
               for (size_t s = 0; s < plan.size(); ++s) {
                 const size_t send_bytes = counts[plan[s].send_block] * item;
                 const size_t recv_bytes = counts[plan[s].recv_block] * item;
                 // Step 0 sends the rank's own input; later steps forward last step's partial
                 // reduction.
                 auto* from = s == 0 ? input.get() : partial[(s - 1) % 2].get();
                 const size_t from_offset = s == 0 ? off[plan[s].send_block] * item : 0;
                 auto* into = partial[s % 2].get();
                 if (recv_bytes) into->recv(prev, kRingSlot, 0, recv_bytes);
                 if (send_bytes) from->send(next, kRingSlot, from_offset, send_bytes);
                 if (recv_bytes) wait_recv(*into, deadline);
                 if (send_bytes) wait_send(*from, deadline);
                 if (!recv_bytes) continue;
                 void* dst = s + 1 == plan.size() ? out.raw_data() : into->ptr;
                 fn(dst, into->ptr, src + off[plan[s].recv_block] * item,
                    counts[plan[s].recv_block]);
               }
             });
}

void GlooCommunicator::direct_all_gather_v(const char* name, const Tensor& in, Tensor& out,
                                           const std::vector<int64_t>& counts) {
  const size_t item = itemsize(in.dtype());
  const auto off = offsets_of(counts);
  collective({.op = name,
              .dtype = static_cast<int64_t>(in.dtype()),
              .numel = out.numel(),
              .counts = counts},
             [&] {
               const auto deadline = Clock::now() + timeout();
               auto into = buffer(out.raw_data(), nbytes(out));
               auto from = buffer(in.raw_data(), nbytes(in));
               int recvs = 0, sends = 0;
               for (int k = 1; k < size(); ++k) {
                 const int r = (rank_ + size() - k) % size();
                 if (counts[r] == 0) continue;
                 into->recv(r, kDirectSlot, off[r] * item, counts[r] * item);
                 ++recvs;
               }
               for (int k = 1; k < size() && counts[rank_]; ++k) {
                 from->send((rank_ + k) % size(), kDirectSlot, 0, nbytes(in));
                 ++sends;
               }
               char* own = static_cast<char*>(out.raw_data()) + off[rank_] * item;
               if (counts[rank_] && own != in.raw_data())
                 std::memcpy(own, in.raw_data(), nbytes(in));
               while (recvs--) wait_recv(*into, deadline);
               while (sends--) wait_send(*from, deadline);
             });
}

void GlooCommunicator::all_to_all_v_packed(const PackFn& pack,
                                           const std::vector<int64_t>& send_counts, Tensor& out,
                                           const std::vector<int64_t>& recv_counts) {
  const char* name = "all_to_all_v";
  if (size() > direct_ranks_)
    return Communicator::all_to_all_v_packed(pack, send_counts, out, recv_counts);
  check_cpu(name, out);
  const int64_t total = std::accumulate(send_counts.begin(), send_counts.end(), int64_t{0});
  check_counts(name, *this, send_counts, total, out);
  check_counts(name, *this, recv_counts, out.numel(), out);
  check_self_counts(name, *this, send_counts, recv_counts);
  const size_t item = itemsize(out.dtype());
  const auto recv_at = offsets_of(recv_counts);
  Tensor flat = reshape_view(out, {out.numel()});
  Tensor scratch = Tensor::empty({total - send_counts[rank_]}, out.dtype());
  collective({.op = name,
              .dtype = static_cast<int64_t>(out.dtype()),
              .send_counts = send_counts,
              .recv_counts = recv_counts},
             [&] {
               const auto deadline = Clock::now() + timeout();
               std::unique_ptr<gloo::transport::UnboundBuffer> into;
               if (out.numel()) into = buffer(out.raw_data(), nbytes(out));
               int recvs = 0;
               for (int k = 1; k < size(); ++k) {
                 const int r = (rank_ + size() - k) % size();
                 if (recv_counts[r] == 0) continue;
                 into->recv(r, kDirectSlot, recv_at[r] * item, recv_counts[r] * item);
                 ++recvs;
               }
               if (send_counts[rank_]) {
                 Tensor own = narrow_view(flat, 0, recv_at[rank_], recv_counts[rank_]);
                 copy_into(own, pack(rank_, own));
               }
               std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> sent;
               int64_t at = 0;
               for (int k = 1; k < size(); ++k) {
                 const int r = (rank_ + k) % size();
                 if (send_counts[r] == 0) continue;
                 Tensor block = pack(r, narrow_view(scratch, 0, at, send_counts[r]));
                 OFL_CHECK(block.is_contiguous() && block.numel() == send_counts[r]);
                 sent.push_back(buffer(block.raw_data(), nbytes(block)));
                 sent.back()->send(r, kDirectSlot);
                 at += send_counts[r];
               }
               while (recvs--) wait_recv(*into, deadline);
               for (auto& b : sent) wait_send(*b, deadline);
             });
}

void GlooCommunicator::gather_blocks(const Tensor& in, Tensor& out, int root,
                                     const std::vector<int64_t>& counts) {
  const char* name = "gather";
  const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  check_counts(name, *this, counts, rank_ == root ? out.numel() : total, rank_ == root ? out : in);
  check_own_count(name, *this, counts, "input", in);
  if (total == 0) return;
  const size_t item = itemsize(in.dtype());
  collective(
      {.op = name, .dtype = static_cast<int64_t>(in.dtype()), .root = root, .counts = counts}, [&] {
        const auto deadline = Clock::now() + timeout();
        if (rank_ != root) {
          if (counts[rank_] == 0) return;
          auto b = buffer(in.raw_data(), nbytes(in));
          b->send(root, kGatherSlot);
          wait_send(*b, deadline);
          return;
        }
        const auto off = offsets_of(counts);
        auto b = buffer(out.raw_data(), nbytes(out));
        int pending = 0;
        for (int r = 0; r < size(); ++r) {
          if (r == rank_ || counts[r] == 0) continue;
          b->recv(r, kGatherSlot, off[r] * item, counts[r] * item);
          ++pending;
        }
        char* own = static_cast<char*>(out.raw_data()) + off[rank_] * item;
        if (counts[rank_] && own != in.raw_data()) std::memcpy(own, in.raw_data(), nbytes(in));
        while (pending--) wait_recv(*b, deadline);
      });
}

void GlooCommunicator::scatter_blocks(const Tensor& in, Tensor& out, int root,
                                      const std::vector<int64_t>& counts) {
  const char* name = "scatter";
  const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  check_counts(name, *this, counts, rank_ == root ? in.numel() : total, rank_ == root ? in : out);
  check_own_count(name, *this, counts, "output", out);
  if (total == 0) return;
  const size_t item = itemsize(out.dtype());
  collective(
      {.op = name, .dtype = static_cast<int64_t>(out.dtype()), .root = root, .counts = counts},
      [&] {
        const auto deadline = Clock::now() + timeout();
        if (rank_ != root) {
          if (counts[rank_] == 0) return;
          auto b = buffer(out.raw_data(), nbytes(out));
          b->recv(root, kScatterSlot);
          wait_recv(*b, deadline);
          return;
        }
        const auto off = offsets_of(counts);
        auto b = buffer(in.raw_data(), nbytes(in));
        int pending = 0;
        for (int r = 0; r < size(); ++r) {
          if (r == rank_ || counts[r] == 0) continue;
          b->send(r, kScatterSlot, off[r] * item, counts[r] * item);
          ++pending;
        }
        const char* own = static_cast<const char*>(in.raw_data()) + off[rank_] * item;
        if (counts[rank_] && own != out.raw_data()) std::memcpy(out.raw_data(), own, nbytes(out));
        while (pending--) wait_send(*b, deadline);
      });
}

}  // namespace ofl::internal::comm::gloo_detail
