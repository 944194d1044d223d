// What makes a tensor global: the logical shape and the layout its shard belongs to.
#pragma once
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "sbp/placement.h"

namespace ofl::internal {

struct BoxingContext;  // boxing/reshard.h: the communicator and plan cache ops on it use

struct GlobalInfo {
  Shape shape;  // logical
  Placement placement;
  NdSbp nd_sbp;
  std::shared_ptr<BoxingContext> ctx;  // null only for tensors no op runs on (tests of plans)
  // Small reshards of this tensor the eager executor keeps (global/global_op), each good while
  // the shard's storage version is the one it was made from.
  struct Boxed {
    NdSbp to;
    uint64_t version = 0;
    Tensor local;
  };
  mutable std::vector<Boxed> boxed;
};

}  // namespace ofl::internal
