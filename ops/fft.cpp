// _fft_c2c: the DFT along one axis of a complex tensor, with a scale (the norm= modes). Linear,
// so its gradient (PyTorch's convention for complex tensors) is the adjoint: the transform the
// other way with the same scale. Every torch.fft function is a composite of it
// (python/oneflowlike/fft.py).
#include "ops/fft.h"

#include <cmath>

#include "core/dispatcher.h"
#include "ops/elementwise_sbp.h"
#include "ops/op_helpers.h"
#include "ops/shape_ops.h"

namespace ofl::internal {

OFL_DEFINE_KERNEL(fft_kernel, FftKernel)

using namespace elementwise_sbp;

namespace {

std::vector<TensorMeta> infer_fft_c2c(const InferArgs& a) {
  const TensorMeta& x = a.in[0];
  if (!is_complex(x.dtype))
    fail<TypeError>(a.op, "expects a complex64 or complex128 tensor, got ", x.str());
  if (x.shape.empty()) fail(a.op, "expects a tensor with at least one dimension, got ", x.str());
  const int64_t axis = a.attrs.axis("dim", static_cast<int64_t>(x.shape.size()), a.op);
  if (x.shape[axis] < 1)
    fail(a.op, "Invalid number of data points (", x.shape[axis], ") specified along dim ", axis,
         " of ", x.str());
  return single_output(x.shape, x.dtype, x.device);
}

void compute_fft_c2c(const ComputeArgs& c) {
  static const OpDef& def = op_def("_fft_c2c");
  require_output_shapes(def, c);
  const Tensor x = contiguous(c.in[0]);
  const int64_t axis = c.attrs.axis("dim", x.dim(), "_fft_c2c");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d < axis) outer *= x.shape()[d];
    if (d > axis) inner *= x.shape()[d];
  }
  if (outer * inner == 0) return;
  fft_kernel().get(x.device().type)(x, outer, x.shape()[axis], inner, c.attrs.get<bool>("forward"),
                                    c.attrs.get<double>("scale"), c.out[0]);
}

// Any axis but the transformed one may be split.
Sigs fft_sbp(const SbpQuery& q) {
  return splits_except(q, q.typed->axis("dim", rank_of(q.in[0]), "_fft_c2c"));
}
const SbpRule kFftRule{"fft", fft_sbp};

// About 5 n log2 n flops per lane of length n; the cost sees no attributes, so the longest axis
// stands for the transformed one.
OpCost fft_cost(const std::vector<Shape>& inputs, const Shape& output, DType dtype) {
  OpCost cost = elementwise_cost(inputs, output, dtype);
  int64_t numel = 1, longest = 1;
  for (int64_t s : output) {
    numel *= s;
    longest = std::max(longest, s);
  }
  cost.flops = 5.0 * static_cast<double>(numel) * std::log2(static_cast<double>(longest) + 1.0);
  return cost;
}

}  // namespace

Tensor fft_c2c(const Tensor& x, int64_t dim, bool forward, double scale) {
  static const OpDef& def = op_def("_fft_c2c");
  return dispatch1(def, {x}, {{"dim", dim}, {"forward", forward}, {"scale", scale}});
}

OFL_REGISTER_OPS({
    {.name = "_fft_c2c",
     .cost = fft_cost,
     .sbp = &kFftRule,
     .attrs = {{"dim", AttrType::kInt}, {"forward", AttrType::kBool}, {"scale", AttrType::kFloat}},
     .infer = infer_fft_c2c,
     .compute = compute_fft_c2c,
     .backward =
         [](const BackwardArgs& b) {
           return std::vector<Tensor>{fft_c2c(b.grads[0], b.attrs.get<int64_t>("dim"),
                                              !b.attrs.get<bool>("forward"),
                                              b.attrs.get<double>("scale"))};
         },
     .complex = true,
     .api = {{"_fft_c2c(Tensor input, int dim, bool forward, float scale=1) -> Tensor", nullptr,
              kInternal}},
     .doc = "The DFT of a complex tensor along dim (forward: exp(-2 pi i jk/n)), times scale"},
});

}  // namespace ofl::internal
