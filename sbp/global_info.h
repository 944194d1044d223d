// What makes a tensor global: the logical shape and the layout its shard belongs to.
#pragma once
#include <memory>

#include "sbp/placement.h"

namespace ofl::internal {

struct BoxingContext;  // boxing/reshard.h: the communicator and plan cache ops on it use

struct GlobalInfo {
  Shape shape;  // logical
  Placement placement;
  NdSbp nd_sbp;
  std::shared_ptr<BoxingContext> ctx;  // null only for tensors no op runs on (tests of plans)
};

}  // namespace ofl::internal
