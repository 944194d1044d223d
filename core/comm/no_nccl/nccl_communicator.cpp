// A CPU-only build has no NCCL backend: asking for one raises instead of failing to link.
#include "core/comm/nccl/nccl_communicator.h"

#include "core/error.h"

namespace ofl::internal::comm {

namespace {

[[noreturn]] void no_nccl() {
  fail("nccl init",
       "this build of oneflowlike has no CUDA, so no NCCL backend; rebuild with "
       "ONEFLOWLIKE_BUILD_CUDA=ON or use Gloo");
}

}  // namespace

std::shared_ptr<Communicator> make_nccl_communicator(std::shared_ptr<Store>, int, int, int,
                                                     Millis) {
  no_nccl();
}

std::shared_ptr<Communicator> make_nccl_group(std::shared_ptr<Store>, std::string, int,
                                              std::vector<int>, std::string, int, Millis) {
  no_nccl();
}

bool nccl_built() {
  return false;
}

}  // namespace ofl::internal::comm
