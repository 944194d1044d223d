// Devices and the per-device-type allocator table that a backend fills in.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace ofl::internal {

// kMeta: tensors with shapes, dtypes and layouts but no memory (PyTorch's meta device); ops on
// them infer their outputs and run no kernel.
enum class DeviceType : uint8_t { kCPU = 0, kCUDA = 1, kMeta = 2 };
inline constexpr int kNumDeviceTypes = 3;

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;
  bool operator==(const Device&) const = default;
  std::string str() const;  // "cpu", "cuda:1", "meta"
  bool is_meta() const { return type == DeviceType::kMeta; }
  static Device parse(const std::string& s);  // "cpu", "cuda", "cuda:1", "meta"
};
const char* device_type_name(DeviceType t);

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t nbytes, int device_index) = 0;
  virtual void deallocate(void* p, size_t nbytes, int device_index) = 0;
};

// Backends register their allocator at load time; a missing one raises "[op] has no X backend".
void register_allocator(DeviceType t, Allocator* a);
Allocator& allocator_for(DeviceType t);

// What a device backend tells about its devices (flow.cuda.*): registered with its allocator.
struct DeviceMemoryStats {
  size_t allocated = 0;  // bytes in tensors now
  size_t peak = 0;       // the most since the last reset
  size_t reserved = 0;   // held from the driver: in tensors and cached
};
class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  virtual int device_count() = 0;           // 0 when the driver finds none (or there is no driver)
  virtual void synchronize(int index) = 0;  // waits for the work queued on the device
  virtual DeviceMemoryStats memory_stats(int index) = 0;
  virtual void reset_peak_memory(int index) = 0;
  virtual void empty_cache() = 0;  // gives the allocator's free blocks back to the driver
  // Names the physical device (its PCI bus id): two ranks on one GPU see the same name.
  virtual std::string bus_id(int index) = 0;
  // The stream handle collectives run on for device `index`: made once, concurrent with the
  // default stream.
  virtual void* comm_stream(int index) = 0;
  // Makes stream `waiter` wait, on the device, for the work queued on stream `on` so far.
  virtual void stream_wait(int index, void* waiter, void* on) = 0;

  // Device graphs (nn.Graph's config.enable_cudagraph; graph/capture.h). A stream of its own for
  // one captured graph: the allocator hands the blocks freed on it only to work on it again, so
  // the memory a capture used stays its own (and empty_cache keeps it) until release_stream.
  virtual void* capture_stream(int index);
  // The work launched on `stream` between begin and end is recorded, not run; end returns it as
  // an executable graph (raising, with the runtime's reason, where something in it could not be
  // captured).
  virtual void begin_capture(int index, void* stream);
  virtual void* end_capture(int index, void* stream);
  virtual void replay(int index, void* graph, void* stream);
  // Frees the graph and returns the stream's blocks to the driver.
  virtual void release_capture(int index, void* graph, void* stream);
};
void register_runtime(DeviceType t, DeviceRuntime* r);
// The backend's runtime; null when this build has none for `t`.
DeviceRuntime* runtime_for(DeviceType t);

// The CUDA backend is a library of its own (liboneflowlike_cuda.so, beside this one) that registers
// its allocator, runtime and kernels when it loads. It loads on first use (the first CUDA tensor,
// runtime query or kernel lookup), so that a process on CPU tensors never loads cuBLAS, cuDNN,
// cuSOLVER and cuFFT (0.1 to 0.2 s of CPU each time here). Returns whether the backend of `t` is
// registered; loading is tried once (thread-safe).
bool load_backend(DeviceType t);
// Why the backend of `t` is missing: the loader's message, or that this build has none.
std::string backend_missing_reason(DeviceType t);

// The CPU allocator keeps freed large blocks for reuse (at most OFL_CPU_CACHE_MB, default 2048).
void release_cached_cpu_memory();
size_t cached_cpu_bytes();
// Bytes held by CPU tensors now and at most since the last reset (rounded as allocated; the
// cache's free blocks not counted): what flow.memory_allocated() and max_memory_allocated() say.
struct CpuMemoryStats {
  size_t allocated = 0, peak = 0;
};
CpuMemoryStats cpu_memory_stats();
void reset_cpu_peak_memory();

}  // namespace ofl::internal
