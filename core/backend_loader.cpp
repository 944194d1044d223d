// Loads a device backend's library on first use (core/device.h says why). The library sits beside
// the one this file is in, which the loader finds by asking where its own code was loaded from.
#include <dlfcn.h>

#include <filesystem>
#include <mutex>
#include <string>

#include "core/device.h"
#include "core/error.h"

namespace ofl::internal {

namespace {

struct Loaded {
  std::once_flag once;
  bool ok = false;
  std::string reason;
};

Loaded& cuda_backend() {
  static Loaded loaded;
  return loaded;
}

std::string this_library_dir() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&load_backend), &info) || !info.dli_fname) return "";
  return std::filesystem::path(info.dli_fname).parent_path().string();
}

void load_cuda(Loaded& loaded) {
  const std::filesystem::path library =
      std::filesystem::path(this_library_dir()) / "liboneflowlike_cuda.so";
  if (!std::filesystem::exists(library)) {
    loaded.reason = str_cat("this build has no CUDA backend (no ", library.string(),
                            "; configure with ONEFLOWLIKE_BUILD_CUDA=ON on a machine with CUDA)");
    return;
  }
  // Never closed: its kernels and allocator are registered in this library's tables.
  if (!dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    const char* why = dlerror();
    loaded.reason =
        str_cat("the CUDA backend ", library.string(), " did not load: ", why ? why : "unknown");
    return;
  }
  loaded.ok = true;
}

}  // namespace

bool load_backend(DeviceType t) {
  if (t != DeviceType::kCUDA) return false;
  // A lookup from the backend's own registration, while it loads, sees what is registered so far
  // (the once flag would wait for itself).
  static thread_local bool loading = false;
  if (loading) return false;
  Loaded& loaded = cuda_backend();
  std::call_once(loaded.once, [&] {
    loading = true;
    load_cuda(loaded);
    loading = false;
  });
  return loaded.ok;
}

std::string backend_missing_reason(DeviceType t) {
  if (t == DeviceType::kCUDA && !load_backend(t)) return cuda_backend().reason;
  return str_cat("this build has no ", device_type_name(t), " backend");
}

}  // namespace ofl::internal
