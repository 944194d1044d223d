// The NCCL collectives: one NCCL call each where NCCL has it, grouped ncclSend/ncclRecv (or
// grouped ncclReduce) for the v-variants, all_to_all, gather and scatter.
#include <cuda_runtime.h>
#include <nccl.h>

#include "core/comm/nccl/nccl_impl.h"
#include "core/error.h"

namespace ofl::internal::comm::nccl_detail {

void NcclCommunicator::all_reduce(Tensor& t, ReduceOp op) {
  const char* name = "all_reduce";
  DeviceGuard guard(device_);
  cudaStream_t s = begin(name);
  check(name, t, "tensor");
  ncclRedOp_t red = nccl_op(name, op, t.dtype(), name_);
  if (t.numel() == 0) return;
  nccl(name, nccl_lib().AllReduce(t.raw_data(), t.raw_data(), t.numel(), nccl_dtype(t.dtype()), red,
                                  comm_, s));
  finish(name, s);
}

void NcclCommunicator::all_gather(const Tensor& in, Tensor& out) {
  const char* name = "all_gather";
  DeviceGuard guard(device_);
  cudaStream_t s = begin(name);
  check(name, in, "input");
  check(name, out, "output");
  check_same_dtype(name, in, out);
  check_blocks(name, *this, "output", out, "input", in);
  if (in.numel() == 0) return;
  nccl(name, nccl_lib().AllGather(in.raw_data(), out.raw_data(), in.numel(), nccl_dtype(in.dtype()),
                                  comm_, s));
  finish(name, s);
}

void NcclCommunicator::all_gather_v(const Tensor& in, Tensor& out,
                                    const std::vector<int64_t>& counts) {
  const char* name = "all_gather_v";
  DeviceGuard guard(device_);
  check(name, in, "input");
  check(name, out, "output");
  check_same_dtype(name, in, out);
  check_counts(name, *this, counts, out.numel(), out);
  check_own_count(name, *this, counts, "input", in);
  if (all_equal(counts)) return all_gather(in, out);
  cudaStream_t s = begin(name);
  auto off = offsets_of(counts);
  ncclDataType_t dt = nccl_dtype(in.dtype());
  copy_local(name, at(out, off[rank_]), in.raw_data(), in.numel() * itemsize(in.dtype()), s);
  grouped(name, [&](ncclResult_t& first) {
    for (int p = 0; p < size(); ++p) {
      if (p == rank_) continue;
      if (counts[rank_] > 0)
        keep(first, nccl_lib().Send(in.raw_data(), counts[rank_], dt, p, comm_, s));
      if (counts[p] > 0) keep(first, nccl_lib().Recv(at(out, off[p]), counts[p], dt, p, comm_, s));
    }
  });
  finish(name, s);
}

void NcclCommunicator::reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) {
  const char* name = "reduce_scatter";
  DeviceGuard guard(device_);
  cudaStream_t s = begin(name);
  check(name, in, "input");
  check(name, out, "output");
  check_same_dtype(name, in, out);
  ncclRedOp_t red = nccl_op(name, op, in.dtype(), name_);
  check_blocks(name, *this, "input", in, "output", out);
  if (out.numel() == 0) return;
  nccl(name, nccl_lib().ReduceScatter(in.raw_data(), out.raw_data(), out.numel(),
                                      nccl_dtype(in.dtype()), red, comm_, s));
  finish(name, s);
}

void NcclCommunicator::reduce_scatter_v(const Tensor& in, Tensor& out,
                                        const std::vector<int64_t>& counts, ReduceOp op) {
  const char* name = "reduce_scatter_v";
  DeviceGuard guard(device_);
  check(name, in, "input");
  check(name, out, "output");
  check_same_dtype(name, in, out);
  check_counts(name, *this, counts, in.numel(), in);
  check_own_count(name, *this, counts, "output", out);
  if (all_equal(counts)) return reduce_scatter(in, out, op);
  cudaStream_t s = begin(name);
  ncclRedOp_t red = nccl_op(name, op, in.dtype(), name_);
  ncclDataType_t dt = nccl_dtype(in.dtype());
  auto off = offsets_of(counts);
  // One reduce per block, rooted at its owner; the non-roots' receive buffer is never written.
  grouped(name, [&](ncclResult_t& first) {
    for (int r = 0; r < size(); ++r) {
      if (counts[r] == 0) continue;
      void* recv = r == rank_ ? out.raw_data() : at(in, off[r]);
      keep(first, nccl_lib().Reduce(at(in, off[r]), recv, counts[r], dt, red, r, comm_, s));
    }
  });
  finish(name, s);
}

void NcclCommunicator::all_to_all(const Tensor& in, Tensor& out) {
  const char* name = "all_to_all";
  if (in.defined() && in.numel() % size() != 0)
    fail(name, "input ", in.str(), " does not split into ", size(), " equal blocks on ", name_);
  std::vector<int64_t> counts(size(), in.defined() ? in.numel() / size() : 0);
  all_to_all_v(in, counts, out, counts);
}

void NcclCommunicator::all_to_all_v(const Tensor& in, const std::vector<int64_t>& send_counts,
                                    Tensor& out, const std::vector<int64_t>& recv_counts) {
  const char* name = "all_to_all_v";
  DeviceGuard guard(device_);
  check(name, in, "input");
  check(name, out, "output");
  check_same_dtype(name, in, out);
  check_counts(name, *this, send_counts, in.numel(), in);
  check_counts(name, *this, recv_counts, out.numel(), out);
  check_self_counts(name, *this, send_counts, recv_counts);
  cudaStream_t s = begin(name);
  auto soff = offsets_of(send_counts), roff = offsets_of(recv_counts);
  ncclDataType_t dt = nccl_dtype(in.dtype());
  // In place (or overlapping): send from a copy, since the receives overwrite the input.
  Tensor src = in;
  size_t in_bytes = in.numel() * itemsize(in.dtype()),
         out_bytes = out.numel() * itemsize(out.dtype());
  const char *a = at(in, 0), *b = at(out, 0);
  if (in_bytes && out_bytes && a < b + out_bytes && b < a + in_bytes) {
    src = Tensor::empty({in.numel()}, in.dtype(), in.device());
    copy_local(name, src.raw_data(), in.raw_data(), in_bytes, s);
  }
  copy_local(name, at(out, roff[rank_]), at(src, soff[rank_]),
             send_counts[rank_] * itemsize(in.dtype()), s);
  grouped(name, [&](ncclResult_t& first) {
    for (int p = 0; p < size(); ++p) {
      if (p == rank_) continue;
      if (send_counts[p] > 0)
        keep(first, nccl_lib().Send(at(src, soff[p]), send_counts[p], dt, p, comm_, s));
      if (recv_counts[p] > 0)
        keep(first, nccl_lib().Recv(at(out, roff[p]), recv_counts[p], dt, p, comm_, s));
    }
  });
  finish(name, s);
}

void NcclCommunicator::broadcast(Tensor& t, int root) {
  const char* name = "broadcast";
  DeviceGuard guard(device_);
  cudaStream_t s = begin(name);
  check_peer(name, *this, root, "root");
  check(name, t, "tensor");
  if (t.numel() == 0) return;
  nccl(name, nccl_lib().Broadcast(t.raw_data(), t.raw_data(), t.numel(), nccl_dtype(t.dtype()),
                                  root, comm_, s));
  finish(name, s);
}

void NcclCommunicator::reduce(Tensor& t, int root, ReduceOp op) {
  const char* name = "reduce";
  DeviceGuard guard(device_);
  cudaStream_t s = begin(name);
  check_peer(name, *this, root, "root");
  check(name, t, "tensor");
  ncclRedOp_t red = nccl_op(name, op, t.dtype(), name_);
  if (t.numel() == 0) return;
  nccl(name, nccl_lib().Reduce(t.raw_data(), t.raw_data(), t.numel(), nccl_dtype(t.dtype()), red,
                               root, comm_, s));
  finish(name, s);
}

void NcclCommunicator::gather(const Tensor& in, Tensor& out, int root,
                              const std::vector<int64_t>& counts_in) {
  const char* name = "gather";
  DeviceGuard guard(device_);
  check_peer(name, *this, root, "root");
  check(name, in, "input");
  std::vector<int64_t> counts =
      counts_in.empty() ? std::vector<int64_t>(size(), in.numel()) : counts_in;
  if (!counts_in.empty() && static_cast<int>(counts.size()) != size())
    fail(name, "got ", counts.size(), " counts for the ", size(), " ranks of ", name_);
  check_own_count(name, *this, counts, "input", in);
  if (rank_ == root) {
    check(name, out, "output");
    check_same_dtype(name, in, out);
    check_counts(name, *this, counts, out.numel(), out);
  }
  cudaStream_t s = begin(name);
  ncclDataType_t dt = nccl_dtype(in.dtype());
  if (rank_ == root) {
    auto off = offsets_of(counts);
    copy_local(name, at(out, off[rank_]), in.raw_data(), in.numel() * itemsize(in.dtype()), s);
    grouped(name, [&](ncclResult_t& first) {
      for (int p = 0; p < size(); ++p)
        if (p != rank_ && counts[p] > 0)
          keep(first, nccl_lib().Recv(at(out, off[p]), counts[p], dt, p, comm_, s));
    });
  } else if (in.numel() > 0) {
    nccl(name, nccl_lib().Send(in.raw_data(), in.numel(), dt, root, comm_, s));
  }
  finish(name, s);
}

void NcclCommunicator::scatter(const Tensor& in, Tensor& out, int root,
                               const std::vector<int64_t>& counts_in) {
  const char* name = "scatter";
  DeviceGuard guard(device_);
  check_peer(name, *this, root, "root");
  check(name, out, "output");
  std::vector<int64_t> counts =
      counts_in.empty() ? std::vector<int64_t>(size(), out.numel()) : counts_in;
  if (!counts_in.empty() && static_cast<int>(counts.size()) != size())
    fail(name, "got ", counts.size(), " counts for the ", size(), " ranks of ", name_);
  check_own_count(name, *this, counts, "output", out);
  if (rank_ == root) {
    check(name, in, "input");
    check_same_dtype(name, in, out);
    check_counts(name, *this, counts, in.numel(), in);
  }
  cudaStream_t s = begin(name);
  ncclDataType_t dt = nccl_dtype(out.dtype());
  if (rank_ == root) {
    auto off = offsets_of(counts);
    copy_local(name, out.raw_data(), at(in, off[rank_]), out.numel() * itemsize(out.dtype()), s);
    grouped(name, [&](ncclResult_t& first) {
      for (int p = 0; p < size(); ++p)
        if (p != rank_ && counts[p] > 0)
          keep(first, nccl_lib().Send(at(in, off[p]), counts[p], dt, p, comm_, s));
    });
  } else if (out.numel() > 0) {
    nccl(name, nccl_lib().Recv(out.raw_data(), out.numel(), dt, root, comm_, s));
  }
  finish(name, s);
}

void NcclCommunicator::send(const Tensor& t, int dst, int) {
  const char* name = "send";
  DeviceGuard guard(device_);
  check_peer(name, *this, dst, "destination");
  check_not_self(name, *this, dst, "send to");
  check(name, t, "tensor");
  cudaStream_t s = begin(name, /*collective=*/false);
  if (t.numel() == 0) return;
  nccl(name, nccl_lib().Send(t.raw_data(), t.numel(), nccl_dtype(t.dtype()), dst, comm_, s), dst);
  finish(name, s, dst);
}

void NcclCommunicator::recv(Tensor& t, int src, int) {
  const char* name = "recv";
  DeviceGuard guard(device_);
  check_peer(name, *this, src, "source");
  check_not_self(name, *this, src, "receive from");
  check(name, t, "tensor");
  cudaStream_t s = begin(name, /*collective=*/false);
  if (t.numel() == 0) return;
  nccl(name, nccl_lib().Recv(t.raw_data(), t.numel(), nccl_dtype(t.dtype()), src, comm_, s), src);
  finish(name, s, src);
}

void NcclCommunicator::barrier() {
  const char* name = "barrier";
  DeviceGuard guard(device_);
  cudaStream_t s = begin(name);
  if (!barrier_buf_) {
    cudaError_t err = cudaMalloc(&barrier_buf_, 1);
    if (err != cudaSuccess) fail(name, "cudaMalloc on ", name_, ": ", cudaGetErrorString(err));
  }
  nccl(name, nccl_lib().AllReduce(barrier_buf_, barrier_buf_, 1, ncclUint8, ncclMax, comm_, s));
  finish(name, s);
}

}  // namespace ofl::internal::comm::nccl_detail
