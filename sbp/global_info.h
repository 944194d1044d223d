// What makes a tensor global: the logical shape and the layout its shard belongs to.
#pragma once
#include "sbp/placement.h"

namespace ofl {

struct GlobalInfo {
  Shape shape;  // logical
  Placement placement;
  NdSbp nd_sbp;
};

}  // namespace ofl
