// Collectives run in the background: one thread per communicator runs what was submitted to it,
// in order, so they overlap the caller's compute (DDP's gradient buckets during backward) and
// every rank issues them in the order it submitted them.
#pragma once
#include <functional>
#include <future>
#include <memory>

#include "core/comm/communicator.h"

namespace ofl::internal::comm {

// Runs fn (collectives on c) on c's background thread after what was submitted there before; the
// future rethrows fn's error. Collectives called directly on c meanwhile must not overlap it, so
// async work goes on a communicator of its own (DDP's group) or is waited for first.
std::shared_future<void> submit(const std::shared_ptr<Communicator>& c, std::function<void()> fn);

}  // namespace ofl::internal::comm
