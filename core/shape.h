// Shapes and strides (in elements), broadcasting and axis normalisation.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ofl::internal {

using Shape = std::vector<int64_t>;

// The element count; raises naming the shape where it overflows 64 bits (never wraps).
int64_t numel_of(const Shape& shape);
// The byte size of a dense tensor of `shape`; raises naming op and the shape where it overflows.
int64_t nbytes_of(const Shape& shape, size_t itemsize, const char* op);
Shape contiguous_strides(const Shape& shape);
std::string shape_str(const Shape& shape);  // "(2, 3)"
// Wraps a possibly negative axis into [0, ndim); raises IndexError naming op otherwise.
int64_t normalize_axis(int64_t axis, int64_t ndim, const char* op);
// The broadcast of two shapes, or an Error naming op and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace ofl::internal
