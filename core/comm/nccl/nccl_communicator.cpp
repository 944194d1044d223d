// NCCL communicator lifecycle and plumbing: unique-id rendezvous, non-blocking init, polling
// against the timeout, abort, and naming the ranks that did not arrive. The collectives are in
// nccl_collectives.cpp. Communicators are non-blocking (config.blocking = 0) so that init and
// every call can be polled against the timeout and aborted instead of hanging inside NCCL.
#include "core/comm/nccl/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>

#include "core/comm/nccl/nccl_impl.h"
#include "core/error.h"
#include "core/stream.h"

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 14, 0)
#error "the NCCL backend needs NCCL >= 2.14 (non-blocking communicators, ncclAvg, bfloat16)"
#endif

namespace ofl::internal::comm {
namespace nccl_detail {
namespace {

std::string seconds(Millis t) {
  return str_cat(t.count() / 1000.0, " s");
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s = "[";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s + "]";
}

}  // namespace

NcclCommunicator::NcclCommunicator(std::shared_ptr<Store> base, std::string prefix, int rank,
                                   std::vector<int> ranks, std::string name, int device,
                                   Millis timeout)
    : Communicator(rank, std::move(ranks), std::move(name)),
      base_(std::move(base)),
      prefix_(std::move(prefix)),
      store_(std::make_shared<PrefixStore>(prefix_, base_)),
      device_(device) {
  const char* op = "nccl init";
  set_timeout(timeout);
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess)
    fail(op, "no usable CUDA device for ", name_, ": ", cudaGetErrorString(err));
  if (device_ < 0 || device_ >= count)
    fail(op, "cuda:", device_, " does not exist (this machine has ", count, " CUDA devices), on ",
         name_);
  DeviceGuard guard(device_);

  ncclUniqueId id;
  if (rank_ == 0) {
    ncclResult_t r = nccl_lib().GetUniqueId(&id);
    if (r != ncclSuccess)
      fail(op, "ncclGetUniqueId on ", name_, ": ", nccl_lib().GetErrorString(r));
    const auto* p = reinterpret_cast<const uint8_t*>(&id);
    store_->set("unique_id", Bytes(p, p + sizeof(id)));
  } else {
    Bytes b;
    try {
      b = store_->get("unique_id");
    } catch (const std::exception& e) {
      fail(op, "rank ", ranks_[rank_], " of ", name_, " got no NCCL unique id from rank ",
           ranks_[0], ": ", e.what());
    }
    if (b.size() != sizeof(id))
      fail(op, "the NCCL unique id for ", name_, " has ", b.size(), " bytes, expected ",
           sizeof(id));
    std::memcpy(&id, b.data(), sizeof(id));
  }
  store_->set(str_cat("joined/", rank_), Bytes{1});

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 19, 0)
  config.commName = name_.c_str();
#endif
  deadline_ = Clock::now() + timeout_;
  ncclResult_t r = nccl_lib().CommInitRankConfig(&comm_, size(), id, rank_, &config);
  while (r == ncclInProgress && comm_) {
    if (Clock::now() > deadline_) {
      std::vector<int> missing;
      try {
        for (int i = 0; i < size(); ++i)
          if (!store_->check({str_cat("joined/", i)})) missing.push_back(ranks_[i]);
      } catch (const std::exception&) {
      }
      abort();
      fail(op, "timed out after ", seconds(timeout_), " creating the NCCL communicator for ", name_,
           " on cuda:", device_,
           missing.empty() ? std::string("; every rank reached init")
                           : "; ranks " + rank_list(missing) + " did not arrive");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    nccl_lib().CommGetAsyncError(comm_, &r);
  }
  if (r != ncclSuccess) {
    std::string detail = comm_ ? nccl_lib().GetLastError(comm_) : "";
    abort();
    fail(op, "creating the NCCL communicator for ", name_, " on cuda:", device_,
         " failed: ", nccl_lib().GetErrorString(r), detail.empty() ? "" : " (" + detail + ")");
  }
  // Created last: a constructor that throws runs no destructor, so nothing may leak before.
  err = cudaEventCreateWithFlags(&done_, cudaEventDisableTiming);
  if (err != cudaSuccess) {
    abort();
    fail(op, "cudaEventCreate on ", name_, ": ", cudaGetErrorString(err));
  }
}

NcclCommunicator::~NcclCommunicator() {
  DeviceGuard guard(device_);
  if (comm_) {
    // Finalize waits for the peers to go quiet; a lost peer makes it time out, then abort.
    ncclResult_t r = nccl_lib().CommFinalize(comm_);
    auto deadline = Clock::now() + std::min<Millis>(timeout_, Millis(30000));
    while (r == ncclInProgress && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      nccl_lib().CommGetAsyncError(comm_, &r);
    }
    if (r == ncclSuccess)
      nccl_lib().CommDestroy(comm_);
    else
      nccl_lib().CommAbort(comm_);
    comm_ = nullptr;
  }
  if (barrier_buf_) cudaFree(barrier_buf_);
  if (done_) cudaEventDestroy(done_);
}

void NcclCommunicator::abort() {
  if (comm_) nccl_lib().CommAbort(comm_);
  comm_ = nullptr;
}

cudaStream_t NcclCommunicator::begin(const char* op, bool collective) {
  if (!comm_)
    fail(op, "the NCCL communicator for ", name_, " was aborted earlier (", broken_,
         "); create a new one");
  if (collective) ++seq_;
  deadline_ = Clock::now() + timeout_;
  return static_cast<cudaStream_t>(current_stream(Device{DeviceType::kCUDA, device_}).handle);
}

void NcclCommunicator::check(const char* op, const Tensor& t, const char* what) const {
  check_tensor(op, *this, t);
  Device want{DeviceType::kCUDA, device_};
  if (t.device() != want)
    fail(op, what, " ", t.str(), " is on ", t.device().str(), " but the NCCL communicator ", name_,
         " serves ", want.str());
}

void NcclCommunicator::check_same_dtype(const char* op, const Tensor& a, const Tensor& b) const {
  if (a.dtype() != b.dtype())
    fail(op, "input ", a.str(), " and output ", b.str(), " differ in dtype on ", name_);
}

void NcclCommunicator::nccl(const char* op, ncclResult_t r, int peer) {
  while (r == ncclInProgress) {
    if (Clock::now() > deadline_) timed_out(op, peer);
    std::this_thread::yield();
    nccl_lib().CommGetAsyncError(comm_, &r);
  }
  if (r != ncclSuccess) nccl_failed(op, r);
}

void NcclCommunicator::grouped(const char* op,
                               const std::function<void(ncclResult_t& keep)>& enqueue) {
  nccl(op, nccl_lib().GroupStart());
  ncclResult_t first = ncclSuccess;
  try {
    enqueue(first);
  } catch (...) {
    nccl_lib().GroupEnd();
    throw;
  }
  nccl(op, nccl_lib().GroupEnd());
  if (first != ncclSuccess) nccl_failed(op, first);
}

void NcclCommunicator::copy_local(const char* op, void* dst, const void* src, size_t nbytes,
                                  cudaStream_t s) {
  if (nbytes == 0 || dst == src) return;
  cudaError_t err = cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, s);
  if (err != cudaSuccess)
    fail(op, "copying the local block on ", name_, ": ", cudaGetErrorString(err));
}

void NcclCommunicator::finish(const char* op, cudaStream_t s, int peer) {
  cudaError_t err = cudaEventRecord(done_, s);
  if (err != cudaSuccess) fail(op, "cudaEventRecord on ", name_, ": ", cudaGetErrorString(err));
  for (int polls = 0;; ++polls) {
    err = cudaEventQuery(done_);
    if (err == cudaSuccess) return;
    if (err != cudaErrorNotReady) {
      broken_ = str_cat("CUDA error in ", op, ": ", cudaGetErrorString(err));
      abort();
      fail(op, "CUDA error on ", name_, ": ", cudaGetErrorString(err));
    }
    ncclResult_t r = ncclSuccess;
    nccl_lib().CommGetAsyncError(comm_, &r);
    if (r != ncclSuccess && r != ncclInProgress) nccl_failed(op, r);
    if (Clock::now() > deadline_) timed_out(op, peer);
    // Spin briefly for small messages' latency, then back off to spare the CPU.
    if (polls < 2000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

void NcclCommunicator::nccl_failed(const char* op, ncclResult_t r) {
  std::string detail = comm_ ? nccl_lib().GetLastError(comm_) : "";
  broken_ = str_cat("NCCL error in ", op, ": ", nccl_lib().GetErrorString(r));
  abort();
  fail(op, "NCCL error on ", name_, ": ", nccl_lib().GetErrorString(r),
       detail.empty() ? "" : " (" + detail + ")", "; the communicator was aborted");
}

void NcclCommunicator::timed_out(const char* op, int peer) {
  std::string why;
  if (peer >= 0)
    why = str_cat("rank ", ranks_[peer], " did not post the matching ",
                  std::strcmp(op, "send") == 0 ? "recv" : "send");
  else
    why = who_is_missing(op);
  broken_ = str_cat(op, " timed out");
  abort();
  fail(op, "timed out after ", seconds(timeout_), " on ", name_, " (cuda:", device_, "): ", why,
       "; the NCCL communicator was aborted");
}

std::string NcclCommunicator::who_is_missing(const char* op) {
  // Members stuck in the same collective time out too and leave a mark; the others never came.
  try {
    std::string base = str_cat("timeout/", seq_, "/");
    store_->set(base + std::to_string(rank_), to_bytes(op));
    auto grace_end = Clock::now() + std::min<Millis>(timeout_, Millis(3000));
    std::vector<int> missing;
    while (true) {
      missing.clear();
      for (int i = 0; i < size(); ++i)
        if (!store_->check({base + std::to_string(i)})) missing.push_back(ranks_[i]);
      if (missing.empty() || Clock::now() > grace_end) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (missing.empty())
      return str_cat("every rank reached ", op, " #", seq_, " but NCCL did not complete it");
    return str_cat("ranks ", rank_list(missing), " did not arrive at ", op, " #", seq_);
  } catch (const std::exception& e) {
    return str_cat("the store could not tell which ranks did not arrive (", e.what(), ")");
  }
}

namespace {

std::shared_ptr<Communicator> world(std::shared_ptr<Store> store, int rank, int size,
                                    int device_index, Millis timeout) {
  const char* op = "nccl init";
  if (!store) fail(op, "needs a store to exchange the NCCL unique id");
  if (size < 1 || rank < 0 || rank >= size)
    fail(op, "rank ", rank, " is out of range for a world of size ", size);
  // Each world on one store gets its own key space; every rank counts its own worlds.
  int64_t generation = store->add(str_cat("nccl/worlds/", rank), 1);
  std::vector<int> ranks(size);
  std::iota(ranks.begin(), ranks.end(), 0);
  return std::make_shared<NcclCommunicator>(store, str_cat("nccl/world", generation), rank,
                                            std::move(ranks), "world", device_index, timeout);
}

std::shared_ptr<Communicator> group(std::shared_ptr<Store> store, std::string prefix, int my_index,
                                    std::vector<int> ranks, std::string name, int device_index,
                                    Millis timeout) {
  return std::make_shared<NcclCommunicator>(std::move(store), std::move(prefix), my_index,
                                            std::move(ranks), std::move(name), device_index,
                                            timeout);
}

const bool registered = (register_nccl({world, group}), true);

}  // namespace
}  // namespace nccl_detail

}  // namespace ofl::internal::comm
