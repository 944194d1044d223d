// Kernel tables: an op definition owns one table per kernel signature; backends fill in a
// slot per device type at load time (ops/cpu, ops/cuda). A missing slot is a clear error.
#pragma once
#include <array>
#include <vector>

#include "core/device.h"
#include "core/error.h"

namespace ofl::internal {

class KernelTableBase {
 public:
  explicit KernelTableBase(const char* op, bool host_only = false);
  virtual ~KernelTableBase();
  KernelTableBase(const KernelTableBase&) = delete;
  KernelTableBase& operator=(const KernelTableBase&) = delete;
  const char* op() const { return op_; }
  virtual bool has(DeviceType t) const = 0;
  // A host-only table: its op runs the kernel on a host copy for every device (LAPACK routines
  // that cuSOLVER lacks), so only a CPU kernel is expected.
  bool host_only() const { return host_only_; }

 private:
  const char* op_;
  bool host_only_;
};
// Every kernel table alive (each registers itself): what tests ask "which kernels does this
// build lack for a device?".
std::vector<const KernelTableBase*> kernel_tables();

template <class Fn>
class KernelTable : public KernelTableBase {
 public:
  explicit KernelTable(const char* op, bool host_only = false) : KernelTableBase(op, host_only) {}
  void set(DeviceType t, Fn* fn) { fns_[static_cast<int>(t)] = fn; }
  Fn* get(DeviceType t) const {
    Fn* fn = fns_[static_cast<int>(t)];
    if (!fn && load_backend(t)) fn = fns_[static_cast<int>(t)];  // a backend loaded on demand
    if (!fn) fail(op(), "has no ", device_type_name(t), " kernel in this build");
    return fn;
  }
  bool has(DeviceType t) const override { return fns_[static_cast<int>(t)] != nullptr; }

 private:
  std::array<Fn*, kNumDeviceTypes> fns_{};
};

// Declares the kernel table `name()` for kernels of type Fn (defined in the op's .cpp).
#define OFL_DECLARE_KERNEL(name, Fn) ::ofl::internal::KernelTable<Fn>& name();
#define OFL_DEFINE_KERNEL(name, Fn)                       \
  ::ofl::internal::KernelTable<Fn>& name() {              \
    static ::ofl::internal::KernelTable<Fn> table(#name); \
    return table;                                         \
  }
// A table whose op calls only its CPU kernel, on a host copy, whatever the tensors' device.
#define OFL_DEFINE_HOST_KERNEL(name, Fn)                        \
  ::ofl::internal::KernelTable<Fn>& name() {                    \
    static ::ofl::internal::KernelTable<Fn> table(#name, true); \
    return table;                                               \
  }
// Registers `fn` for `device` when the backend's library loads.
#define OFL_REGISTER_KERNEL(name, device, fn) \
  static const bool ofl_registered_##name##_##fn = (name().set(device, fn), true)

}  // namespace ofl::internal
