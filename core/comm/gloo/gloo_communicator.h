// The Gloo backend: CPU tensors over TCP, ranks meeting through a Store.
//
// - A collective or send/recv that fails (timeout, lost peer) raises ofl::internal::Error naming
//   the group, the collective and the ranks that did not arrive; the communicator is unusable
//   afterwards (Gloo closes its connections), so create a new one.
// - send() returns once the receiver has posted the matching recv and the data is on the wire:
//   two ranks must not both send to each other first.
// - Every collective that is not planned (PlannedCollectives: boxing's) first compares the
//   ranks' calls (collective, dtype, size, root, counts) in one small allgather: a mismatch
//   raises on every rank instead of hanging, returning garbage or aborting. OFL_COMM_CHECK=0
//   turns this off, OFL_COMM_CHECK=all on for planned ones too.
// - One thread at a time per communicator.
#pragma once
#include <memory>
#include <string>

#include "core/comm/communicator.h"

namespace ofl::internal::comm {

// The world communicator of `size` ranks; `host` is the address this rank's sockets listen on
// (e.g. "127.0.0.1"). Every rank calls it with the same store, size and timeout; it returns
// once all ranks are connected, or raises naming the ranks that did not arrive within timeout.
std::shared_ptr<Communicator> make_gloo_communicator(std::shared_ptr<Store> store, int rank,
                                                     int size, const std::string& host,
                                                     Millis timeout = default_timeout());

}  // namespace ofl::internal::comm
