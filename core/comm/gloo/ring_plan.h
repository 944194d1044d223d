// Schedules of the collectives the Gloo backend builds itself from send/recv, as plain data so
// tests can check them without sockets.
#pragma once
#include <vector>

namespace ofl::internal::comm {

// One step of a ring: send block `send_block` to rank + 1, receive block `recv_block` from
// rank - 1 and reduce it with the local contribution.
struct RingStep {
  int send_block;
  int recv_block;
  bool operator==(const RingStep&) const = default;
};

// Ring reduce-scatter over `size` ranks: size - 1 steps after which `rank` holds the full
// reduction of block `rank`. Step 0 sends the rank's own input; later steps forward the partial
// sum received in the step before.
inline std::vector<RingStep> ring_reduce_scatter_plan(int rank, int size) {
  std::vector<RingStep> steps;
  auto mod = [size](int i) { return ((i % size) + size) % size; };
  for (int s = 0; s + 1 < size; ++s) steps.push_back({mod(rank - 1 - s), mod(rank - 2 - s)});
  return steps;
}

}  // namespace ofl::internal::comm
