// A CPU-only build has no NCCL backend: asking for one raises instead of failing to link.
#include "core/comm/nccl/nccl_communicator.h"

#include "core/error.h"

namespace ofl::internal::comm {

std::shared_ptr<Communicator> make_nccl_communicator(std::shared_ptr<Store>, int, int, int,
                                                     Millis) {
  fail("nccl init",
       "this build of oneflowlike has no CUDA, so no NCCL backend; rebuild with "
       "ONEFLOWLIKE_BUILD_CUDA=ON or use Gloo");
}

}  // namespace ofl::internal::comm
