// The NCCL backend: a Communicator over CUDA tensors on one device per rank. Compiled into the
// CUDA backend's library (CMake globs this folder then), which registers its entry points when
// it loads; the functions below load it and raise where the build has none.
//
// Semantics that differ from Gloo, all behind the same interface:
// - Work is enqueued on current_stream(cuda:device_index) and every call waits for it (polling,
//   so a lost peer raises after the timeout and the NCCL communicator is aborted).
// - bool reduces as uint8 bytes: sum and max are logical or, product and min logical and;
//   avg of bools raises. Integer avg is NCCL's sum then integer division.
// - send/recv ignore the tag: messages between two ranks arrive in the order they were sent.
//   NCCL's send completes only once the peer receives, so two ranks that both send before
//   receiving deadlock (until the timeout).
// - Sub-groups bootstrap a fresh NCCL communicator from a unique id shared through a
//   PrefixStore, so creating one is collective over its members only (ncclCommSplit would
//   need every rank of the parent).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/comm/communicator.h"

namespace ofl::internal::comm {

// Rank `rank` of `size` on CUDA device `device_index`. Rank 0 creates the NCCL unique id and
// publishes it through `store`; every rank waits at most `timeout` for the others to join.
std::shared_ptr<Communicator> make_nccl_communicator(std::shared_ptr<Store> store, int rank,
                                                     int size, int device_index,
                                                     Millis timeout = default_timeout());

// The NCCL communicator over `ranks` (global ranks; this process is ranks[my_index]), named
// `name`, bootstrapped under the store keys `prefix`: collective over its members only.
std::shared_ptr<Communicator> make_nccl_group(std::shared_ptr<Store> store, std::string prefix,
                                              int my_index, std::vector<int> ranks,
                                              std::string name, int device_index, Millis timeout);

// Whether this build has the NCCL backend (loading the CUDA backend to know).
bool nccl_built();

// What the CUDA backend's library registers when it loads.
struct NcclEntryPoints {
  std::shared_ptr<Communicator> (*communicator)(std::shared_ptr<Store> store, int rank, int size,
                                                int device_index, Millis timeout);
  std::shared_ptr<Communicator> (*group)(std::shared_ptr<Store> store, std::string prefix,
                                         int my_index, std::vector<int> ranks, std::string name,
                                         int device_index, Millis timeout);
};
void register_nccl(NcclEntryPoints entry);

}  // namespace ofl::internal::comm
