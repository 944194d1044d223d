// Kernel tables: an op definition owns one table per kernel signature; backends fill in a
// slot per device type at load time (ops/cpu, ops/cuda). A missing slot is a clear error.
#pragma once
#include <array>

#include "core/device.h"
#include "core/error.h"

namespace ofl::internal {

template <class Fn>
class KernelTable {
 public:
  explicit KernelTable(const char* op) : op_(op) {}
  void set(DeviceType t, Fn* fn) { fns_[static_cast<int>(t)] = fn; }
  Fn* get(DeviceType t) const {
    Fn* fn = fns_[static_cast<int>(t)];
    if (!fn) fail(op_, "has no ", device_type_name(t), " kernel in this build");
    return fn;
  }
  const char* op() const { return op_; }

 private:
  const char* op_;
  std::array<Fn*, kNumDeviceTypes> fns_{};
};

// Declares the kernel table `name()` for kernels of type Fn (defined in the op's .cpp).
#define OFL_DECLARE_KERNEL(name, Fn) ::ofl::internal::KernelTable<Fn>& name();
#define OFL_DEFINE_KERNEL(name, Fn)                       \
  ::ofl::internal::KernelTable<Fn>& name() {              \
    static ::ofl::internal::KernelTable<Fn> table(#name); \
    return table;                                         \
  }
// Registers `fn` for `device` when the backend's library loads.
#define OFL_REGISTER_KERNEL(name, device, fn) \
  static const bool ofl_registered_##name##_##fn = (name().set(device, fn), true)

}  // namespace ofl::internal
