// Conversions between Python objects and C++ values for the bindings.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include "core/tensor.h"

namespace ofl::internal::py_bind {

namespace py = pybind11;

// A tensor, or a Python bool/int/float as a 0-d wrapped number, or array-like data.
Tensor as_tensor(py::handle obj, const char* op);
// Zero-copy where numpy's layout allows (positive, element-aligned strides).
Tensor from_numpy(py::array arr);
// A numpy array sharing the tensor's memory.
py::array to_numpy(const Tensor& t);
// Shape from f(2, 3), f((2, 3)) or f([2, 3]).
Shape shape_from_args(const py::args& args, const char* op);
Shape to_shape(py::handle obj, const char* op);
// Axes from None (all), an int or a sequence of ints.
std::vector<int64_t> to_axes(py::handle obj);
DType dtype_of_array(const py::array& arr);
py::dtype numpy_dtype(DType t);
std::optional<DType> to_dtype_opt(py::handle obj);
// A Python callable kept by C++ (an autograd node, a hook): released with the GIL held,
// whichever thread frees it.
std::shared_ptr<py::function> hold_callable(py::function fn);

}  // namespace ofl::internal::py_bind
