// The CUDA backend's runtime: the caching allocator (blocks kept per device and stream after
// free, with memory statistics), the device runtime core asks about devices (count,
// synchronize, memory), and the copy and fill primitives (host <-> device, device <-> device,
// any strides, broadcasting and dtype conversion). Registered only in CUDA builds (CMake picks
// this folder); a CPU-only build has no kCUDA slots, so CUDA use fails with a clear error.
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include "core/device.h"
#include "core/kernel_table.h"
#include "core/primitives.h"
#include "core/storage.h"
#include "ops/cuda/common.cuh"

namespace ofl::internal::cuda {
namespace {

// Makes `device` current while in scope (errors ignored: frees run in destructors, also while
// the process exits).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) : device_(device) {
    if (cudaGetDevice(&prev_) != cudaSuccess) prev_ = -1;
    if (prev_ != device_) cudaSetDevice(device_);
  }
  ~DeviceGuard() {
    if (prev_ >= 0 && prev_ != device_) cudaSetDevice(prev_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int device_, prev_ = -1;
};

// Freed blocks are kept by (device, stream, rounded size) and handed out again to allocations on
// the same stream, so a block is never reused by work another stream may still be running on it
// (PyTorch's rule). A block freed by a thread whose current stream is another one (the compute
// thread freeing a collective's output, made on the communication stream) may still be read
// there: it waits for an event on that stream before it is reused. empty_cache() gives the
// blocks back to the driver.
class CachingAllocator : public Allocator, public DeviceRuntime {
 public:
  void* allocate(size_t nbytes, int device) override {
    const size_t size = rounded(nbytes);
    cudaStream_t stream = stream_of(Device{DeviceType::kCUDA, device});
    std::lock_guard lock(mu_);
    PerDevice& d = per_device(device);
    collect_pending(d);
    void* p = nullptr;
    auto& free = d.free[{stream, size}];
    if (!free.empty()) {
      p = free.back();
      free.pop_back();
      d.cached -= size;
    } else {
      check(cudaSetDevice(device), "cuda allocate");
      cudaError_t err = cudaMalloc(&p, size);
      if (err == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();  // clear the error, free the cache, try once more
        release(device, d);
        err = cudaMalloc(&p, size);
        if (err == cudaErrorMemoryAllocation) {
          (void)cudaGetLastError();
          fail("cuda allocate", "out of memory allocating ", size, " bytes on cuda:", device, " (",
               d.allocated, " bytes in tensors; flow.cuda.empty_cache() frees the cache)");
        }
      }
      // Another error (an earlier kernel's fault, reported here) is not out of memory.
      if (err != cudaSuccess) (void)cudaGetLastError();
      check(err, "cuda allocate");
      d.reserved += size;
    }
    blocks_[p] = {size, stream};
    d.allocated += size;
    d.peak = std::max(d.peak, d.allocated);
    return p;
  }

  void deallocate(void* p, size_t, int device) override {
    if (!p) return;
    std::lock_guard lock(mu_);
    auto it = blocks_.find(p);
    if (it == blocks_.end()) return;
    PerDevice& d = per_device(device);
    const Block block = it->second;
    blocks_.erase(it);
    d.allocated -= block.size;
    d.cached += block.size;
    const cudaStream_t freeing = stream_of(Device{DeviceType::kCUDA, device});
    cudaEvent_t read = nullptr;
    if (freeing != block.stream) {
      // The event is made on, and a null `freeing` names the default stream of, the current
      // device, and cudaEventRecord fails for a stream of another device: be on the block's.
      DeviceGuard on(device);
      if (cudaEventCreateWithFlags(&read, cudaEventDisableTiming) == cudaSuccess) {
        if (cudaEventRecord(read, freeing) == cudaSuccess) {
          d.pending.push_back({block, p, read});
          return;
        }
        cudaEventDestroy(read);
      }
    }
    (void)cudaGetLastError();  // (while the process exits, the driver may be gone: reuse it)
    d.free[{block.stream, block.size}].push_back(p);
  }

  int device_count() override {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();  // no driver or no device: none
      return 0;
    }
    return n;
  }
  void synchronize(int device) override {
    check(cudaSetDevice(device), "cuda synchronize");
    check(cudaDeviceSynchronize(), "cuda synchronize");
  }
  DeviceMemoryStats memory_stats(int device) override {
    std::lock_guard lock(mu_);
    PerDevice& d = per_device(device);
    return {d.allocated, d.peak, d.reserved};
  }
  void reset_peak_memory(int device) override {
    std::lock_guard lock(mu_);
    PerDevice& d = per_device(device);
    d.peak = d.allocated;
  }
  void empty_cache() override {
    std::lock_guard lock(mu_);
    for (auto& [device, d] : devices_) release(device, d);
  }

  std::string bus_id(int index) override {
    char id[32] = {};
    check(cudaDeviceGetPCIBusId(id, sizeof id, index), "cuda");
    return id;
  }

  void* comm_stream(int index) override {
    std::lock_guard lock(streams_mu_);
    cudaStream_t& s = comm_streams_[index];
    if (!s) {
      check(cudaSetDevice(index), "cuda comm stream");
      // Non-blocking: it does not wait for the legacy default stream, where kernels run.
      check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cuda comm stream");
    }
    return s;
  }

  void* capture_stream(int index) override {
    check(cudaSetDevice(index), "cudagraph");
    cudaStream_t s = nullptr;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudagraph");
    std::lock_guard lock(mu_);
    per_device(index).captures.insert(s);
    return s;
  }

  void begin_capture(int index, void* stream) override {
    check(cudaSetDevice(index), "cudagraph");
    // Relaxed: the allocator may still call cudaMalloc while a step is captured.
    check(cudaStreamBeginCapture(static_cast<cudaStream_t>(stream), cudaStreamCaptureModeRelaxed),
          "cudagraph");
  }

  void* end_capture(int index, void* stream) override {
    check(cudaSetDevice(index), "cudagraph");
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(static_cast<cudaStream_t>(stream), &graph);
    if (ended != cudaSuccess) {
      if (graph) cudaGraphDestroy(graph);
      check(ended, "cudagraph: capturing the step");
    }
    cudaGraphExec_t exec = nullptr;
    const cudaError_t made = cudaGraphInstantiateWithFlags(&exec, graph, 0);
    cudaGraphDestroy(graph);
    check(made, "cudagraph: instantiating the captured step");
    return exec;
  }

  void replay(int index, void* graph, void* stream) override {
    check(cudaSetDevice(index), "cudagraph");
    check(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), static_cast<cudaStream_t>(stream)),
          "cudagraph: replaying the step");
  }

  void release_capture(int index, void* graph, void* stream) override {
    cudaSetDevice(index);
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    cudaStreamSynchronize(s);
    if (graph) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph));
    std::lock_guard lock(mu_);
    PerDevice& d = per_device(index);
    d.captures.erase(s);
    release(index, d, s);  // the blocks only this stream could reuse
    cudaStreamDestroy(s);
    (void)cudaGetLastError();  // (while the process exits, the driver may be gone)
  }

  void stream_wait(int index, void* waiter, void* on) override {
    check(cudaSetDevice(index), "cuda stream wait");
    cudaEvent_t done;
    check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cuda stream wait");
    check(cudaEventRecord(done, static_cast<cudaStream_t>(on)), "cuda stream wait");
    check(cudaStreamWaitEvent(static_cast<cudaStream_t>(waiter), done, 0), "cuda stream wait");
    check(cudaEventDestroy(done), "cuda stream wait");  // the wait above holds on to it
  }

 private:
  struct Block {
    size_t size;
    cudaStream_t stream;
  };
  struct Pending {
    Block block;
    void* p;
    cudaEvent_t read;  // recorded on the stream that freed it
  };
  struct PerDevice {
    std::map<std::pair<cudaStream_t, size_t>, std::vector<void*>> free;
    std::set<cudaStream_t> captures;  // streams of live captured graphs: their blocks are kept
    std::vector<Pending> pending;
    size_t allocated = 0, peak = 0, reserved = 0, cached = 0;
  };

  // 512-byte steps below 1 MiB, 2 MiB steps above: few distinct sizes to reuse.
  static size_t rounded(size_t n) {
    constexpr size_t kSmall = 512, kLarge = size_t{2} << 20;
    if (n < (size_t{1} << 20)) return n == 0 ? kSmall : (n + kSmall - 1) / kSmall * kSmall;
    return (n + kLarge - 1) / kLarge * kLarge;
  }
  PerDevice& per_device(int device) { return devices_[device]; }
  // Moves the blocks whose other-stream readers are done (or all, when `wait`) to the free lists.
  void collect_pending(PerDevice& d, bool wait = false) {
    std::erase_if(d.pending, [&](const Pending& q) {
      if (!wait && cudaEventQuery(q.read) != cudaSuccess) {
        (void)cudaGetLastError();  // cudaErrorNotReady is not an error to keep
        return false;
      }
      cudaEventDestroy(q.read);
      d.free[{q.block.stream, q.block.size}].push_back(q.p);
      return true;
    });
  }
  // Frees device's cached blocks once the work queued on it is done: those of stream `only`, or
  // (when null) all but those a captured graph still runs on.
  void release(int device, PerDevice& d, cudaStream_t only = nullptr) {
    if (d.cached == 0) return;
    cudaSetDevice(device);
    cudaDeviceSynchronize();
    collect_pending(d, true);
    for (auto it = d.free.begin(); it != d.free.end();) {
      const cudaStream_t stream = it->first.first;
      if (only ? stream != only : d.captures.count(stream) > 0) {
        ++it;
        continue;
      }
      for (void* p : it->second) {
        cudaFree(p);
        d.reserved -= it->first.second;
        d.cached -= it->first.second;
      }
      it = d.free.erase(it);
    }
  }

  std::mutex mu_;
  std::unordered_map<void*, Block> blocks_;
  std::mutex streams_mu_;
  std::unordered_map<int, cudaStream_t> comm_streams_;
  std::map<int, PerDevice> devices_;
};

// --- copy and fill ----------------------------------------------------------------------------

template <class To, class From>
__global__ void copy_strided(To* dst, const From* src, int64_t n, Strided<2> walk) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  int64_t at[2];
  walk.offsets(i, at);
  dst[at[0]] = convert<To>(src[at[1]]);
}

// dst = src (broadcast, converted) with both on the same GPU.
void copy_on_device(const Tensor& src, const Tensor& dst) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  check(cudaSetDevice(dst.device().index), "copy_");
  const Shape strides[2] = {dst.strides(), broadcast_strides(src, dst.shape())};
  const Strided<2> walk = strided<2>(dst.shape(), strides, "copy_");
  cudaStream_t stream = stream_of(dst.device());
  dispatch_all(dst.dtype(), [&](auto to) {
    using To = device_t<typename decltype(to)::type>;
    dispatch_all(src.dtype(), [&](auto from) {
      using From = device_t<typename decltype(from)::type>;
      copy_strided<To, From><<<blocks_for(n, kThreads), kThreads, 0, stream>>>(
          static_cast<To*>(dst.raw_data()), static_cast<const From*>(src.raw_data()), n, walk);
    });
  });
  check(cudaGetLastError(), "copy_");
}

// Whether copying src into dst is one block of bytes.
bool plain(const Tensor& src, const Tensor& dst) {
  return src.dtype() == dst.dtype() && src.shape() == dst.shape() && src.is_contiguous() &&
         dst.is_contiguous();
}

void fill(const Tensor& dst, double value);

// Copies src into dst where either may be on the host or on any GPU.
void copy(const Tensor& src, const Tensor& dst) {
  if (copy_complex(src, dst, copy, fill)) return;
  const bool to_host = dst.device().type == DeviceType::kCPU;
  const bool from_host = src.device().type == DeviceType::kCPU;
  const size_t nbytes = size_t(dst.numel()) * itemsize(dst.dtype());
  if (!from_host && !to_host && src.device() == dst.device()) {
    if (!plain(src, dst)) return copy_on_device(src, dst);
    check(cudaSetDevice(dst.device().index), "copy_");
    return check(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), nbytes, cudaMemcpyDeviceToDevice,
                                 stream_of(dst.device())),
                 "copy_");
  }
  if (plain(src, dst)) {
    const Device gpu = to_host ? src.device() : dst.device();
    check(cudaSetDevice(gpu.index), "copy_");
    cudaStream_t stream = stream_of(gpu);
    if (!from_host && !to_host) {  // after the source device's queued work
      // (on the source device: a null stream is the current device's default stream)
      check(cudaSetDevice(src.device().index), "copy_");
      check(cudaStreamSynchronize(stream_of(src.device())), "copy_");
      check(cudaSetDevice(gpu.index), "copy_");
      check(cudaMemcpyPeerAsync(dst.raw_data(), dst.device().index, src.raw_data(),
                                src.device().index, nbytes, stream),
            "copy_");
    } else {
      check(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), nbytes, cudaMemcpyDefault, stream),
            "copy_");
    }
    // The host side is pageable memory the caller may reuse at once; a peer copy is ordered with
    // no work on the source device, which may free (reuse) or overwrite the source next: wait.
    check(cudaStreamSynchronize(stream), "copy_");
    return;
  }
  // Otherwise convert and lay out where the data is, then move one plain block.
  if (from_host) {  // on the host into dst's layout and dtype, then up
    Tensor host = Tensor::empty(dst.shape(), dst.dtype());
    copy_kernel().get(DeviceType::kCPU)(src, host);
    if (dst.is_contiguous()) return copy(host, dst);
    Tensor staged = Tensor::empty(dst.shape(), dst.dtype(), dst.device());
    copy(host, staged);
    return copy_on_device(staged, dst);
  }
  // From a GPU: into dst's shape and dtype there, contiguous, then across (to the host or to
  // another GPU), then into dst's layout where dst is.
  Tensor staged = Tensor::empty(dst.shape(), dst.dtype(), src.device());
  copy_on_device(src, staged);
  if (dst.is_contiguous()) return copy(staged, dst);  // one plain block now
  Tensor landed = Tensor::empty(dst.shape(), dst.dtype(), dst.device());
  copy(staged, landed);
  if (to_host) return copy_kernel().get(DeviceType::kCPU)(landed, dst);
  copy_on_device(landed, dst);
}

template <class T>
__global__ void fill_strided(T* p, int64_t n, T v, Strided<1> walk) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  int64_t at[1];
  walk.offsets(i, at);
  p[at[0]] = v;
}

void fill(const Tensor& dst, double value) {
  if (fill_complex(dst, value, fill)) return;
  const int64_t n = dst.numel();
  if (n == 0) return;
  check(cudaSetDevice(dst.device().index), "fill_");
  const Shape strides[1] = {dst.strides()};
  const Strided<1> walk = strided<1>(dst.shape(), strides, "fill_");
  dispatch_all(dst.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using D = device_t<T>;
    const T host_value = static_cast<T>(static_cast<opmath_t<T>>(value));
    D v;
    std::memcpy(&v, &host_value, sizeof v);  // the same bits on the device
    fill_strided<D><<<blocks_for(n, kThreads), kThreads, 0, stream_of(dst.device())>>>(
        static_cast<D*>(dst.raw_data()), n, v, walk);
  });
  check(cudaGetLastError(), "fill_");
}

const bool registered = [] {
  static CachingAllocator* allocator = new CachingAllocator();  // outlives static tensors
  register_allocator(DeviceType::kCUDA, allocator);
  register_runtime(DeviceType::kCUDA, allocator);
  return true;
}();
OFL_REGISTER_KERNEL(copy_kernel, DeviceType::kCUDA, copy);
OFL_REGISTER_KERNEL(fill_kernel, DeviceType::kCUDA, fill);

}  // namespace
}  // namespace ofl::internal::cuda
