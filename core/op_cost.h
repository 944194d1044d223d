// What one call of an op costs on one device, as the cost model reads it (sbp/cluster_spec.h
// prices it): the op's FLOPs, the bytes it moves and, where its FLOPs are a GEMM's, the GEMM's
// shape.
#pragma once

namespace ofl::internal {

// The matrix products a call runs as one kernel: `count` independent m x n x k products (a
// batched GEMM's batch), for pricing by tiles and waves (ClusterSpec::compute). count 0: no GEMM.
struct GemmShape {
  double count = 0, m = 0, n = 0, k = 0;
};

// Work of one call on one device, for the roofline cost model.
struct OpCost {
  double flops = 0;
  double bytes = 0;  // read + written
  GemmShape gemm;    // where the FLOPs are a GEMM's (or an implicit GEMM's: conv, attention)
};

}  // namespace ofl::internal
