// Multi-rank inference: the processes of a job started by the launcher
// (python -m oneflowlike.distributed.launch --nproc_per_node N server ...) join one world, and a
// graph saved from a global (e.g. tensor-parallel) model loads on it, each rank reading only its
// own shards of the weights.
#pragma once
#include <memory>

#include "oneflowlike/tensor.h"

namespace ofl {

namespace internal {
struct BoxingContext;
}

class World {
 public:
  int rank() const;
  int size() const;

  // For the implementation: the communicator and plan cache a global graph runs with.
  explicit World(std::shared_ptr<internal::BoxingContext> impl);
  const std::shared_ptr<internal::BoxingContext>& impl() const { return impl_; }

 private:
  std::shared_ptr<internal::BoxingContext> impl_;
};

// Joins the job the launcher's environment describes (RANK, WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT, OFL_STORE_TOKEN; OFL_COMM_HOST overrides this machine's address): every rank
// calls it; rank 0 hosts the rendezvous. Without those variables, a world of one process. Waits
// at most `timeout_seconds` for the others, then throws naming who is missing.
World init_distributed(double timeout_seconds = 300);

}  // namespace ofl
