// Python's x[key] and x[key] = value: basic indexing as views, one integer-array index
// (index_select), and boolean masks (masked_select; masked_fill_ / masked_scatter_ to assign).
#pragma once
#include "convert.h"

namespace ofl::internal::py_bind {

Tensor index(const Tensor& x, py::handle key);
void set_index(Tensor& x, py::handle key, py::handle value);

}  // namespace ofl::internal::py_bind
