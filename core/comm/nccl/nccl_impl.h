// Internals of the NCCL backend, shared by its .cpp files: the communicator class, dtype and
// reduce-op mapping, the device guard. Includes nccl.h, so only CUDA builds see it.
#pragma once
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "core/comm/communicator.h"
#include "core/comm/nccl/nccl_api.h"
#include "core/comm/store.h"
#include "core/error.h"

namespace ofl::internal::comm::nccl_detail {

// Makes `device` current on this thread for the guard's lifetime (ranks may be threads).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) : device_(device) {
    cudaGetDevice(&prev_);
    if (prev_ != device_) cudaSetDevice(device_);
  }
  ~DeviceGuard() {
    if (prev_ != device_) cudaSetDevice(prev_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int device_;
  int prev_ = 0;
};

inline ncclDataType_t nccl_dtype(DType t) {
  switch (t) {
    case DType::kBool:
    case DType::kUInt8:
      return ncclUint8;
    case DType::kInt8:
      return ncclInt8;
    case DType::kInt32:
      return ncclInt32;
    case DType::kInt64:
      return ncclInt64;
    case DType::kFloat16:
      return ncclFloat16;
    case DType::kBFloat16:
      return ncclBfloat16;
    case DType::kFloat32:
      return ncclFloat32;
    case DType::kFloat64:
      return ncclFloat64;
  }
  OFL_CHECK(false, "unknown dtype ", static_cast<int>(t));
  return ncclUint8;
}

// bool travels as 0/1 bytes: max is logical or, min logical and (as PyTorch's NCCL backend).
inline ncclRedOp_t nccl_op(const char* op, ReduceOp r, DType t, const std::string& group) {
  if (t == DType::kBool) {
    switch (r) {
      case ReduceOp::kSum:
      case ReduceOp::kMax:
        return ncclMax;
      case ReduceOp::kProduct:
      case ReduceOp::kMin:
        return ncclMin;
      case ReduceOp::kAvg:
        fail(op, "avg of a bool tensor is undefined on ", group,
             "; use sum/max (logical or) or product/min (logical and)");
    }
  }
  switch (r) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kProduct:
      return ncclProd;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kAvg:
      return ncclAvg;
  }
  OFL_CHECK(false, "unknown reduce op");
  return ncclSum;
}

inline std::vector<int64_t> offsets_of(const std::vector<int64_t>& counts) {
  std::vector<int64_t> off(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) off[i] = off[i - 1] + counts[i - 1];
  return off;
}

inline bool all_equal(const std::vector<int64_t>& v) {
  return std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) == v.end();
}

// Keeps the first real error of a group's calls (ncclInProgress is not one).
inline void keep(ncclResult_t& first, ncclResult_t r) {
  if (first == ncclSuccess && r != ncclSuccess && r != ncclInProgress) first = r;
}

using Clock = std::chrono::steady_clock;

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(std::shared_ptr<Store> base, std::string prefix, int rank,
                   std::vector<int> ranks, std::string name, int device, Millis timeout);
  ~NcclCommunicator() override;

  void all_reduce(Tensor& t, ReduceOp op) override;
  void all_gather(const Tensor& in, Tensor& out) override;
  void all_gather_v(const Tensor& in, Tensor& out, const std::vector<int64_t>& counts) override;
  void reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) override;
  void reduce_scatter_v(const Tensor& in, Tensor& out, const std::vector<int64_t>& counts,
                        ReduceOp op) override;
  void all_to_all(const Tensor& in, Tensor& out) override;
  void all_to_all_v(const Tensor& in, const std::vector<int64_t>& send_counts, Tensor& out,
                    const std::vector<int64_t>& recv_counts) override;
  void broadcast(Tensor& t, int root) override;
  void reduce(Tensor& t, int root, ReduceOp op) override;
  void gather(const Tensor& in, Tensor& out, int root, const std::vector<int64_t>& counts) override;
  void scatter(const Tensor& in, Tensor& out, int root,
               const std::vector<int64_t>& counts) override;
  void send(const Tensor& t, int dst, int tag) override;
  void recv(Tensor& t, int src, int tag) override;
  void barrier() override;

 protected:
  std::shared_ptr<Communicator> make_group(const std::vector<int>& members, int my_index,
                                           const std::string& name) override {
    return std::make_shared<NcclCommunicator>(base_, prefix_ + "/" + name, my_index, members, name,
                                              device_, timeout_);
  }

 private:
  // Starts a call: checks the communicator is usable and sets the deadline.
  cudaStream_t begin(const char* op, bool collective = true);
  void check(const char* op, const Tensor& t, const char* what) const;
  void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) const;
  char* at(const Tensor& t, int64_t elems) const {
    return static_cast<char*>(t.raw_data()) + elems * itemsize(t.dtype());
  }
  // Checks an NCCL call's result, waiting out ncclInProgress (non-blocking communicator).
  void nccl(const char* op, ncclResult_t r, int peer = -1);
  // Runs `enqueue` between ncclGroupStart and ncclGroupEnd. It hands each call's result to
  // `keep`: an error is acted on only after ncclGroupEnd, never with the group half open.
  void grouped(const char* op, const std::function<void(ncclResult_t& keep)>& enqueue);
  void copy_local(const char* op, void* dst, const void* src, size_t nbytes, cudaStream_t s);
  // Waits for the work enqueued on `s`, polling for NCCL errors and the deadline.
  void finish(const char* op, cudaStream_t s, int peer = -1);
  [[noreturn]] void nccl_failed(const char* op, ncclResult_t r);
  [[noreturn]] void timed_out(const char* op, int peer);
  // Which members never reached collective number `seq_` (asked through the store).
  std::string who_is_missing(const char* op);
  void abort();

  std::shared_ptr<Store> base_;
  std::string prefix_;
  std::shared_ptr<Store> store_;  // base_ under prefix_
  int device_;
  ncclComm_t comm_ = nullptr;
  cudaEvent_t done_ = nullptr;
  void* barrier_buf_ = nullptr;
  std::string broken_;  // why the communicator was aborted; empty while usable
  uint64_t seq_ = 0;    // collectives started; equal across members
  Clock::time_point deadline_;
};

}  // namespace ofl::internal::comm::nccl_detail
