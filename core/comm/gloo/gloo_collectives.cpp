// Collectives that map onto one Gloo algorithm: allreduce (ring), allgather(v), alltoall(v),
// broadcast, reduce, gather and scatter of equal blocks, barrier.
#include <cstdint>  // first: Gloo's types.h uses uint8_t without including it

#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/scatter.h>

#include <cstring>
#include <memory>
#include <numeric>

#include "core/comm/gloo/gloo_impl.h"
#include "core/error.h"

namespace ofl::internal::comm::gloo_detail {
namespace {

// Gloo's typed setters only use sizeof(T), so one type per element size is enough.
template <class F>
void with_element_type(DType dtype, F&& f) {
  switch (itemsize(dtype)) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    case 8:
      return f(uint64_t{});
  }
  OFL_CHECK(false, "unexpected itemsize ", itemsize(dtype));
}

size_t nbytes(const Tensor& t) {
  return static_cast<size_t>(t.numel()) * itemsize(t.dtype());
}

int64_t code(const Tensor& t) {
  return static_cast<int64_t>(t.dtype());
}
int64_t code(ReduceOp op) {
  return static_cast<int64_t>(op);
}

std::vector<size_t> to_sizes(const std::vector<int64_t>& counts) {
  return std::vector<size_t>(counts.begin(), counts.end());
}

}  // namespace

void GlooCommunicator::all_reduce(Tensor& t, ReduceOp op) {
  const char* name = "all_reduce";
  check_cpu(name, t);
  check_reduce_op(name, t.dtype(), op);
  if (t.numel() == 0) return;
  collective({.op = name, .dtype = code(t), .numel = t.numel(), .reduce = code(op)}, [&] {
    with_element_type(t.dtype(), [&](auto e) {
      using T = decltype(e);
      gloo::AllreduceOptions o(ctx_);
      o.setTag(op_tag());
      o.setOutput<T>(buffer(t.raw_data(), nbytes(t)));
      o.setReduceFunction(reduce_fn(t.dtype(), op));
      o.setTimeout(timeout());
      gloo::allreduce(o);
    });
  });
  if (op == ReduceOp::kAvg) divide_in_place(t.raw_data(), t.numel(), t.dtype(), size());
}

void GlooCommunicator::all_gather(const Tensor& in, Tensor& out) {
  const char* name = "all_gather";
  check_cpu(name, in);
  check_cpu(name, out);
  check_same_dtype(name, in, out);
  check_blocks(name, *this, "output", out, "input", in);
  if (in.numel() == 0) return;
  collective({.op = name, .dtype = code(in), .numel = in.numel()}, [&] {
    with_element_type(in.dtype(), [&](auto e) {
      using T = decltype(e);
      gloo::AllgatherOptions o(ctx_);
      o.setTag(op_tag());
      // Without an input Gloo gathers in place from the rank's own block of the output.
      const char* own = static_cast<const char*>(out.raw_data()) + rank_ * nbytes(in);
      if (in.raw_data() != own) o.setInput<T>(buffer(in.raw_data(), nbytes(in)));
      o.setOutput<T>(buffer(out.raw_data(), nbytes(out)));
      o.setTimeout(timeout());
      gloo::allgather(o);
    });
  });
}

void GlooCommunicator::all_gather_v(const Tensor& in, Tensor& out,
                                    const std::vector<int64_t>& counts) {
  const char* name = "all_gather_v";
  check_cpu(name, in);
  check_cpu(name, out);
  check_same_dtype(name, in, out);
  check_counts(name, *this, counts, out.numel(), out);
  check_own_count(name, *this, counts, "input", in);
  if (out.numel() == 0) return;
  if (size() <= direct_ranks_) return direct_all_gather_v(name, in, out, counts);
  collective({.op = name, .dtype = code(in), .numel = out.numel(), .counts = counts}, [&] {
    with_element_type(in.dtype(), [&](auto e) {
      using T = decltype(e);
      gloo::AllgathervOptions o(ctx_);
      o.setTag(op_tag());
      // Without an input Gloo gathers in place from the rank's own block of the output.
      const int64_t before = std::accumulate(counts.begin(), counts.begin() + rank_, int64_t{0});
      const char* own = static_cast<const char*>(out.raw_data()) + before * itemsize(in.dtype());
      if (in.raw_data() != own) o.setInput<T>(static_cast<T*>(in.raw_data()), in.numel());
      o.setOutput<T>(static_cast<T*>(out.raw_data()), to_sizes(counts));
      o.setTimeout(timeout());
      gloo::allgatherv(o);
    });
  });
}

void GlooCommunicator::all_to_all(const Tensor& in, Tensor& out) {
  const char* name = "all_to_all";
  check_cpu(name, in);
  check_cpu(name, out);
  check_same_dtype(name, in, out);
  if (in.numel() != out.numel() || in.numel() % size() != 0)
    fail(name, "input ", in.str(), " and output ", out.str(), " must hold the same number of ",
         "elements, divisible by the ", size(), " ranks of ", name_);
  if (in.numel() == 0) return;
  // Gloo's alltoall reads its input while writing its output; an in-place call needs a copy.
  Tensor src = in;
  if (in.raw_data() == out.raw_data()) {
    src = Tensor::empty(in.shape(), in.dtype());
    std::memcpy(src.raw_data(), in.raw_data(), nbytes(in));
  }
  collective({.op = name, .dtype = code(in), .numel = in.numel()}, [&] {
    with_element_type(in.dtype(), [&](auto e) {
      using T = decltype(e);
      gloo::AlltoallOptions o(ctx_);
      o.setTag(op_tag());
      o.setInput<T>(buffer(src.raw_data(), nbytes(src)));
      o.setOutput<T>(buffer(out.raw_data(), nbytes(out)));
      o.setTimeout(timeout());
      gloo::alltoall(o);
    });
  });
}

void GlooCommunicator::all_to_all_v(const Tensor& in, const std::vector<int64_t>& send_counts,
                                    Tensor& out, const std::vector<int64_t>& recv_counts) {
  const char* name = "all_to_all_v";
  check_cpu(name, in);
  check_cpu(name, out);
  check_same_dtype(name, in, out);
  check_counts(name, *this, send_counts, in.numel(), in);
  check_counts(name, *this, recv_counts, out.numel(), out);
  check_self_counts(name, *this, send_counts, recv_counts);
  Tensor src = in;
  if (in.numel() > 0 && in.raw_data() == out.raw_data()) {
    src = Tensor::empty(in.shape(), in.dtype());
    std::memcpy(src.raw_data(), in.raw_data(), nbytes(in));
  }
  // An empty tensor may have no address; hand Gloo a valid one for its zero bytes.
  char dummy = 0;
  void* in_ptr = src.numel() ? src.raw_data() : &dummy;
  void* out_ptr = out.numel() ? out.raw_data() : &dummy;
  collective(
      {.op = name, .dtype = code(in), .send_counts = send_counts, .recv_counts = recv_counts}, [&] {
        with_element_type(in.dtype(), [&](auto e) {
          using T = decltype(e);
          gloo::AlltoallvOptions o(ctx_);
          o.setTag(op_tag());
          o.setInput<T>(static_cast<T*>(in_ptr), send_counts);
          o.setOutput<T>(static_cast<T*>(out_ptr), recv_counts);
          o.setTimeout(timeout());
          gloo::alltoallv(o);
        });
      });
}

void GlooCommunicator::broadcast(Tensor& t, int root) {
  const char* name = "broadcast";
  check_cpu(name, t);
  check_peer(name, *this, root, "root");
  if (t.numel() == 0) return;
  collective({.op = name, .dtype = code(t), .numel = t.numel(), .root = root}, [&] {
    with_element_type(t.dtype(), [&](auto e) {
      using T = decltype(e);
      gloo::BroadcastOptions o(ctx_);
      o.setTag(op_tag());
      o.setOutput<T>(buffer(t.raw_data(), nbytes(t)));
      o.setRoot(root);
      o.setTimeout(timeout());
      gloo::broadcast(o);
    });
  });
}

void GlooCommunicator::reduce(Tensor& t, int root, ReduceOp op) {
  const char* name = "reduce";
  check_cpu(name, t);
  check_peer(name, *this, root, "root");
  check_reduce_op(name, t.dtype(), op);
  if (t.numel() == 0) return;
  // Gloo's ring reduce scribbles partial sums into every rank's output; non-roots keep t intact
  // by reducing into scratch.
  Tensor scratch_t;  // cached memory: no fresh pages per call
  if (rank_ != root) scratch_t = Tensor::empty({static_cast<int64_t>(nbytes(t))}, DType::kUInt8);
  char* scratch = scratch_t.defined() ? static_cast<char*>(scratch_t.raw_data()) : nullptr;
  collective({.op = name, .dtype = code(t), .numel = t.numel(), .root = root, .reduce = code(op)},
             [&] {
               with_element_type(t.dtype(), [&](auto e) {
                 using T = decltype(e);
                 gloo::ReduceOptions o(ctx_);
                 o.setTag(op_tag());
                 if (scratch) {
                   o.setInput<T>(buffer(t.raw_data(), nbytes(t)));
                   o.setOutput<T>(buffer(scratch, nbytes(t)));
                 } else {
                   o.setOutput<T>(buffer(t.raw_data(), nbytes(t)));
                 }
                 o.setRoot(root);
                 o.setReduceFunction(reduce_fn(t.dtype(), op));
                 o.setTimeout(timeout());
                 gloo::reduce(o);
               });
             });
  if (op == ReduceOp::kAvg && rank_ == root)
    divide_in_place(t.raw_data(), t.numel(), t.dtype(), size());
}

void GlooCommunicator::gather(const Tensor& in, Tensor& out, int root,
                              const std::vector<int64_t>& counts) {
  const char* name = "gather";
  check_cpu(name, in);
  check_peer(name, *this, root, "root");
  if (rank_ == root) {
    check_cpu(name, out);
    check_same_dtype(name, in, out);
  }
  if (!counts.empty()) return gather_blocks(in, out, root, counts);
  if (rank_ == root) check_blocks(name, *this, "output on root", out, "input", in);
  if (in.numel() == 0) return;
  collective({.op = name, .dtype = code(in), .numel = in.numel(), .root = root}, [&] {
    with_element_type(in.dtype(), [&](auto e) {
      using T = decltype(e);
      gloo::GatherOptions o(ctx_);
      o.setTag(op_tag());
      o.setInput<T>(buffer(in.raw_data(), nbytes(in)));
      if (rank_ == root) o.setOutput<T>(buffer(out.raw_data(), nbytes(out)));
      o.setRoot(root);
      o.setTimeout(timeout());
      gloo::gather(o);
    });
  });
}

void GlooCommunicator::scatter(const Tensor& in, Tensor& out, int root,
                               const std::vector<int64_t>& counts) {
  const char* name = "scatter";
  check_cpu(name, out);
  check_peer(name, *this, root, "root");
  if (rank_ == root) {
    check_cpu(name, in);
    check_same_dtype(name, in, out);
  }
  if (!counts.empty()) return scatter_blocks(in, out, root, counts);
  if (rank_ == root) check_blocks(name, *this, "input on root", in, "output", out);
  if (out.numel() == 0) return;
  collective({.op = name, .dtype = code(out), .numel = out.numel(), .root = root}, [&] {
    with_element_type(out.dtype(), [&](auto e) {
      using T = decltype(e);
      gloo::ScatterOptions o(ctx_);
      o.setTag(op_tag());
      if (rank_ == root) {
        std::vector<T*> blocks;
        for (int r = 0; r < size(); ++r)
          blocks.push_back(static_cast<T*>(in.raw_data()) + r * out.numel());
        o.setInputs<T>(blocks, out.numel());
      }
      o.setOutput<T>(buffer(out.raw_data(), nbytes(out)));
      o.setRoot(root);
      o.setTimeout(timeout());
      gloo::scatter(o);
    });
  });
}

void GlooCommunicator::barrier() {
  collective({.op = "barrier"}, [&] {
    gloo::BarrierOptions o(ctx_);
    o.setTag(op_tag());
    o.setTimeout(timeout());
    gloo::barrier(o);
  });
}

}  // namespace ofl::internal::comm::gloo_detail
