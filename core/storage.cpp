#include "core/storage.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "core/error.h"

namespace ofl::internal {

namespace {

// Blocks of kCacheMin bytes and more are kept after free, by size, and handed out again: a
// training loop that allocates the same activations every step then stops paying for fresh
// pages (page faults) on every call. Smaller blocks go straight to malloc, which is fast for them.
class CachingCpuAllocator : public Allocator {
 public:
  static constexpr size_t kCacheMin = size_t{1} << 18;
  static constexpr size_t kPage = 4096;

  CachingCpuAllocator() {
    const char* env = std::getenv("OFL_CPU_CACHE_MB");
    limit_ = (env ? std::strtoull(env, nullptr, 10) : 2048) << 20;
  }
  ~CachingCpuAllocator() override { release_cached(); }

  void* allocate(size_t nbytes, int) override {
    size_t size = rounded(nbytes);
    const size_t now = allocated_.fetch_add(size, std::memory_order_relaxed) + size;
    for (size_t peak = peak_.load(std::memory_order_relaxed);
         now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed);) {
    }
    if (size >= kCacheMin) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(size);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_ -= size;
        return p;
      }
    }
    void* p = std::aligned_alloc(64, size);
    if (!p) {  // give the cache back to the system and try once more
      release_cached();
      p = std::aligned_alloc(64, size);
      if (!p) throw std::bad_alloc();
    }
    return p;
  }

  void deallocate(void* p, size_t nbytes, int) override {
    size_t size = rounded(nbytes);
    allocated_.fetch_sub(size, std::memory_order_relaxed);
    if (size >= kCacheMin) {
      std::lock_guard<std::mutex> lock(mu_);
      if (cached_ + size <= limit_) {
        free_[size].push_back(p);
        cached_ += size;
        return;
      }
    }
    std::free(p);
  }

  void release_cached() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [size, blocks] : free_)
      for (void* p : blocks) std::free(p);
    free_.clear();
    cached_ = 0;
  }

  size_t cached_bytes() {
    std::lock_guard<std::mutex> lock(mu_);
    return cached_;
  }
  size_t allocated() const { return allocated_.load(std::memory_order_relaxed); }
  size_t peak() const { return peak_.load(std::memory_order_relaxed); }
  void reset_peak() { peak_.store(allocated(), std::memory_order_relaxed); }

 private:
  static size_t rounded(size_t n) {
    if (n >= kCacheMin) return (n + kPage - 1) / kPage * kPage;
    return n == 0 ? 64 : (n + 63) / 64 * 64;
  }

  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_ = 0;
  size_t limit_ = 0;
  std::atomic<size_t> allocated_{0}, peak_{0};  // bytes in tensors (not the cache)
};

// Meta storage has a size and no memory.
class MetaAllocator : public Allocator {
 public:
  void* allocate(size_t, int) override { return nullptr; }
  void deallocate(void*, size_t, int) override {}
};

CachingCpuAllocator& cpu_allocator() {
  static CachingCpuAllocator* cpu = new CachingCpuAllocator();  // outlives static tensors
  return *cpu;
}

Allocator*& allocator_slot(DeviceType t) {
  static MetaAllocator meta;
  static Allocator* table[kNumDeviceTypes] = {&cpu_allocator(), nullptr, &meta};
  return table[static_cast<int>(t)];
}

}  // namespace

void release_cached_cpu_memory() {
  cpu_allocator().release_cached();
}
size_t cached_cpu_bytes() {
  return cpu_allocator().cached_bytes();
}
CpuMemoryStats cpu_memory_stats() {
  return {cpu_allocator().allocated(), cpu_allocator().peak()};
}
void reset_cpu_peak_memory() {
  cpu_allocator().reset_peak();
}

const char* device_type_name(DeviceType t) {
  static const char* names[] = {"cpu", "cuda", "meta"};
  return names[static_cast<int>(t)];
}

std::string Device::str() const {
  if (type != DeviceType::kCUDA) return device_type_name(type);
  return std::string(device_type_name(type)) + ":" + std::to_string(index);
}

Device Device::parse(const std::string& s) {
  auto colon = s.find(':');
  std::string kind = s.substr(0, colon);
  int index = 0;
  if (colon != std::string::npos) {
    try {
      index = std::stoi(s.substr(colon + 1));
    } catch (const std::exception&) {
      fail("device", "cannot parse device '", s, "'");
    }
  }
  if (kind == "cpu") return {DeviceType::kCPU, 0};
  if (kind == "cuda") return {DeviceType::kCUDA, index};
  if (kind == "meta") return {DeviceType::kMeta, 0};
  fail("device", "unknown device '", s, "' (expected 'cpu', 'cuda[:i]' or 'meta')");
}

namespace {
DeviceRuntime*& runtime_slot(DeviceType t) {
  static DeviceRuntime* table[kNumDeviceTypes] = {};
  return table[static_cast<int>(t)];
}
}  // namespace

// A runtime without device graphs says so on each of their calls.
void* DeviceRuntime::capture_stream(int) {
  fail("cudagraph", "this device's runtime does not capture graphs");
}
void DeviceRuntime::begin_capture(int, void*) {
  capture_stream(0);
}
void* DeviceRuntime::end_capture(int, void*) {
  return capture_stream(0);
}
void DeviceRuntime::replay(int, void*, void*) {
  capture_stream(0);
}
void DeviceRuntime::release_capture(int, void*, void*) {}

void register_runtime(DeviceType t, DeviceRuntime* r) {
  runtime_slot(t) = r;
}

DeviceRuntime* runtime_for(DeviceType t) {
  if (!runtime_slot(t)) load_backend(t);
  return runtime_slot(t);
}

void register_allocator(DeviceType t, Allocator* a) {
  allocator_slot(t) = a;
}

Allocator& allocator_for(DeviceType t) {
  Allocator* a = allocator_slot(t);
  if (!a && load_backend(t)) a = allocator_slot(t);
  if (!a) fail("allocate", backend_missing_reason(t));
  return *a;
}

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  data_ = allocator_for(device.type).allocate(nbytes, device.index);
}

Storage::Storage(void* data, size_t nbytes, Device device, std::function<void()> release)
    : data_(data), nbytes_(nbytes), device_(device), release_(std::move(release)) {}

Storage::~Storage() {
  if (release_) {
    release_();
  } else if (data_) {
    allocator_for(device_.type).deallocate(data_, nbytes_, device_.index);
  }
}

}  // namespace ofl::internal
