#include "core/storage.h"

#include <cstdlib>
#include <new>

#include "core/error.h"

namespace ofl {

namespace {

class CpuAllocator : public Allocator {
 public:
  void* allocate(size_t nbytes, int) override {
    size_t rounded = (nbytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void deallocate(void* p, size_t, int) override { std::free(p); }
};

Allocator*& allocator_slot(DeviceType t) {
  static CpuAllocator cpu;
  static Allocator* table[kNumDeviceTypes] = {&cpu, nullptr};
  return table[static_cast<int>(t)];
}

}  // namespace

const char* device_type_name(DeviceType t) {
  return t == DeviceType::kCPU ? "cpu" : "cuda";
}

std::string Device::str() const {
  if (type == DeviceType::kCPU) return "cpu";
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
  fail("device", "unknown device '", s, "' (expected 'cpu' or 'cuda[:i]')");
}

void register_allocator(DeviceType t, Allocator* a) {
  allocator_slot(t) = a;
}

Allocator& allocator_for(DeviceType t) {
  Allocator* a = allocator_slot(t);
  if (!a)
    fail("allocate", "this build has no ", device_type_name(t),
         " backend (configure with ONEFLOWLIKE_BUILD_CUDA=ON on a machine with CUDA)");
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

}  // namespace ofl
