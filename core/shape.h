// Shapes and strides (in elements), broadcasting and axis normalisation.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ofl::internal {

using Shape = std::vector<int64_t>;

int64_t numel_of(const Shape& shape);
Shape contiguous_strides(const Shape& shape);
std::string shape_str(const Shape& shape);  // "(2, 3)"
// Wraps a possibly negative axis into [0, ndim); raises IndexError naming op otherwise.
int64_t normalize_axis(int64_t axis, int64_t ndim, const char* op);
// The broadcast of two shapes, or an Error naming op and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace ofl::internal
