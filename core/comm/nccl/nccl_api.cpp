#include "core/comm/nccl/nccl_api.h"

#include <dlfcn.h>

#include "core/error.h"

namespace ofl::internal::comm::nccl_detail {

namespace {

NcclApi load() {
  constexpr const char* kLibrary = "libnccl.so.2";
  // RTLD_LOCAL: its symbols stay out of the process's global scope.
  void* lib = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!lib) fail("nccl", "cannot load ", kLibrary, ": ", dlerror());
  NcclApi api;
#define OFL_NCCL_LOAD(name)                                                             \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(lib, "nccl" #name));            \
  if (!api.name)                                                                        \
    fail("nccl", kLibrary, " has no nccl" #name " (NCCL ", NCCL_MAJOR, ".", NCCL_MINOR, \
         " or later is needed)");
  OFL_NCCL_FUNCTIONS(OFL_NCCL_LOAD)
#undef OFL_NCCL_LOAD
  return api;
}

}  // namespace

const NcclApi& nccl_lib() {
  static const NcclApi api = load();
  return api;
}

}  // namespace ofl::internal::comm::nccl_detail
