#include "core/shape.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace ofl::internal {

int64_t numel_of(const Shape& shape) {
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n))
      fail("shape", "a tensor of shape ", shape_str(shape),
           " has more elements than a 64-bit count holds");
  return n;
}

int64_t nbytes_of(const Shape& shape, size_t itemsize, const char* op) {
  int64_t bytes = 0;
  if (__builtin_mul_overflow(numel_of(shape), int64_t(itemsize), &bytes))
    fail(op, "a tensor of shape ", shape_str(shape), " with ", itemsize,
         "-byte elements needs more bytes than a 64-bit size holds");
  return bytes;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  const bool empty = numel_of(shape) == 0;  // raises where the elements overflow
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    // An empty tensor's strides address nothing: where they overflow they saturate.
    if (__builtin_mul_overflow(s, std::max<int64_t>(shape[i], 1), &s) && empty)
      s = std::numeric_limits<int64_t>::max();
  }
  return strides;
}

std::string shape_str(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

int64_t normalize_axis(int64_t axis, int64_t ndim, const char* op) {
  int64_t n = std::max<int64_t>(ndim, 1);  // a 0-d tensor accepts axis 0 and -1
  if (axis < -n || axis >= n)
    fail<IndexError>(op, "dimension ", axis, " is out of range for a tensor of ", ndim,
                     " dimensions (expected in [", -n, ", ", n - 1, "])");
  return axis < 0 ? axis + n : axis;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      fail(op, "shapes ", shape_str(a), " and ", shape_str(b), " cannot be broadcast: dimension ",
           i, " is ", da, " vs ", db);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace ofl::internal
