// Convolution, pooling and batch norm: placeholders until their kernels land.
#include "ops/conv.h"

namespace ofl {

Tensor conv2d(const Tensor&, const Tensor&, const Tensor&, Pair, Pair, Pair, int64_t) {
  fail("conv2d", "not implemented yet");
}
Tensor max_pool2d(const Tensor&, Pair, Pair, Pair) { fail("max_pool2d", "not implemented yet"); }
Tensor avg_pool2d(const Tensor&, Pair, Pair, Pair, bool) {
  fail("avg_pool2d", "not implemented yet");
}
Tensor batch_norm(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool,
                  double, double) {
  fail("batch_norm", "not implemented yet");
}

}  // namespace ofl
