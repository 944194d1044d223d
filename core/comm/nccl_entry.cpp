// The NCCL entry points as the rest of the library calls them: through what the CUDA backend's
// library registered when it loaded (core/comm/nccl/nccl_communicator.h).
#include "core/comm/nccl/nccl_communicator.h"
#include "core/device.h"
#include "core/error.h"

namespace ofl::internal::comm {

namespace {

NcclEntryPoints& entry_slot() {
  static NcclEntryPoints entry{};
  return entry;
}

const NcclEntryPoints& entry() {
  if (!nccl_built())
    fail("nccl init", "no NCCL backend: ", backend_missing_reason(DeviceType::kCUDA), "; use Gloo");
  return entry_slot();
}

}  // namespace

void register_nccl(NcclEntryPoints e) {
  entry_slot() = e;
}

bool nccl_built() {
  load_backend(DeviceType::kCUDA);
  return entry_slot().group != nullptr;
}

std::shared_ptr<Communicator> make_nccl_communicator(std::shared_ptr<Store> store, int rank,
                                                     int size, int device_index, Millis timeout) {
  return entry().communicator(std::move(store), rank, size, device_index, timeout);
}

std::shared_ptr<Communicator> make_nccl_group(std::shared_ptr<Store> store, std::string prefix,
                                              int my_index, std::vector<int> ranks,
                                              std::string name, int device_index, Millis timeout) {
  return entry().group(std::move(store), std::move(prefix), my_index, std::move(ranks),
                       std::move(name), device_index, timeout);
}

}  // namespace ofl::internal::comm
