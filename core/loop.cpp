#include "core/loop.h"

namespace ofl::internal {

void broadcast_byte_strides(const Tensor& t, const Shape& shape, LoopDims& out) {
  out.assign(shape.size(), 0);
  const int64_t isz = static_cast<int64_t>(itemsize(t.dtype()));
  const size_t off = shape.size() - t.shape().size();
  OFL_CHECK(shape.size() >= t.shape().size());
  for (size_t d = 0; d < t.shape().size(); ++d)
    out[off + d] = t.shape()[d] == 1 ? 0 : t.strides()[d] * isz;
}

}  // namespace ofl::internal
