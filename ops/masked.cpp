// masked_select and masked_scatter, and in-place writes as the out-of-place op copied into self.
#include "ops/masked.h"

#include "core/autograd/node.h"
#include "core/dispatcher.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/elementwise_sbp.h"
#include "ops/index_ops.h"
#include "ops/kernels.h"
#include "ops/op_helpers.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"

namespace ofl::internal {

using namespace elementwise_sbp;

namespace {

void require_bool_mask(const char* op, const TensorMeta& mask) {
  if (mask.dtype != DType::kBool)
    fail<TypeError>(op, "mask must be a bool tensor, got ", mask.str());
}

// --- masked_select ---

std::vector<TensorMeta> infer_masked_select(const InferArgs& a) {
  const TensorMeta &x = a.in[0], &mask = a.in[1];
  require_bool_mask(a.op, mask);
  const Device device = common_device(a);
  const Shape shape = broadcast_shapes(x.shape, mask.shape, a.op);
  const int64_t count = a.attrs.get<int64_t>("count");
  if (count < 0)
    fail(a.op, "the output shape depends on the data of the mask of shape ", shape_str(mask.shape),
         " (how many elements are true), which ",
         device.is_meta() ? "a meta tensor does not have" : "is not here for a global tensor",
         "; use where() or masked_fill() for a result of fixed shape");
  return single_output({count}, x.dtype, device);
}

void compute_masked_select(const ComputeArgs& c) {
  const Tensor& out = c.out[0];
  const Shape shape = broadcast_shapes(c.in[0].shape(), c.in[1].shape(), "masked_select");
  masked_select_kernel().get(out.device().type)(contiguous(expand(c.in[0], shape)),
                                                contiguous(expand(c.in[1], shape)), out);
}

std::vector<Tensor> masked_select_grad(const BackwardArgs& b) {
  const Tensor &x = b.in[0], &mask = b.in[1];
  const Shape shape = broadcast_shapes(b.in_meta[0].shape, b.in_meta[1].shape, "masked_select");
  Tensor zeros = zeros_like(expand(x, shape));
  return {sum_to(masked_scatter(zeros, mask, b.grads[0]), b.in_meta[0].shape), Tensor()};
}

// The number of true elements of mask broadcast to `shape`, read from the data; -1 where the
// data is not here (meta and global tensors), which masked_select's infer then explains.
int64_t selected_count(const Tensor& x, const Tensor& mask) {
  if (kind_of({x, mask}) != TensorKind::kLocal || mask.dtype() != DType::kBool) return -1;
  const Shape shape = broadcast_shapes(x.shape(), mask.shape(), "masked_select");
  if (numel_of(shape) == 0) return 0;
  autograd::NoGradGuard no_grad;
  return sum(mask).item<int64_t>() * (numel_of(shape) / mask.numel());
}

// --- masked_scatter ---

std::vector<TensorMeta> infer_masked_scatter(const InferArgs& a) {
  const TensorMeta &x = a.in[0], &mask = a.in[1], &source = a.in[2];
  require_bool_mask(a.op, mask);
  if (source.dtype != x.dtype)
    fail<TypeError>(a.op, "the source's dtype ", dtype_name(source.dtype),
                    " differs from the input's ", dtype_name(x.dtype));
  if (broadcast_shapes(x.shape, mask.shape, a.op) != x.shape)
    fail(a.op, "the mask of shape ", shape_str(mask.shape),
         " does not broadcast to the input's shape ", shape_str(x.shape));
  return single_output(x.shape, x.dtype, common_device(a));
}

void compute_masked_scatter(const ComputeArgs& c) {
  static const OpDef& def = op_def("masked_scatter");
  require_output_shapes(def, c);
  const Tensor& out = c.out[0];
  // The kernel writes a contiguous tensor: masked_scatter_ of a strided view gets its result
  // through a contiguous one.
  const Tensor dense =
      out.is_contiguous() ? out : Tensor::empty(out.shape(), out.dtype(), out.device());
  copy_into(dense, c.in[0]);
  masked_scatter_kernel().get(out.device().type)(contiguous(expand(c.in[1], out.shape())),
                                                 contiguous(c.in[2]), dense);
  if (dense.storage() != out.storage()) copy_into(out, dense);
}

// Masked positions pass no gradient to x; source's first count elements get it, in order.
std::vector<Tensor> masked_scatter_grad(const BackwardArgs& b) {
  const Tensor &mask = b.in[1], &g = b.grads[0];
  Tensor gx, gsrc;
  if (b.needs[0]) gx = where(mask, zeros_like(g), g);
  if (b.needs[2]) {
    const Shape& src = b.in_meta[2].shape;
    Tensor picked = masked_select(g, mask);
    gsrc = reshape(slice_backward(picked, {numel_of(src)}, 0, 0, meta_of(picked).shape[0], 1), src);
  }
  return {gx, Tensor(), gsrc};
}

// --- in place ---

// What the out-of-place op reads for self: self itself, or a clone when autograd records (the op
// may save its inputs, and copying into self changes self's version).
Tensor read_self(const Tensor& self, const std::vector<Tensor>& others) {
  std::vector<Tensor> all = others;
  all.push_back(self);
  return autograd::any_requires_grad(all) ? clone(self) : self;
}

// Writes the out-of-place result into self: one version bump, and self's history continues
// through the result's (copy_ records the step).
Tensor& write_into(const char* op, Tensor& self, const Tensor& result) {
  if (meta_of(result).shape != meta_of(self).shape)
    fail(op, "the result of shape ", shape_str(meta_of(result).shape),
         " does not fit the written-to tensor of shape ", shape_str(meta_of(self).shape));
  return copy_(self, result);
}

}  // namespace

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  static const OpDef& def = op_def("masked_select");
  return dispatch1(def, {x, mask}, {{"count", selected_count(x, mask)}});
}

Tensor masked_scatter(const Tensor& x, const Tensor& mask, const Tensor& source) {
  static const OpDef& def = op_def("masked_scatter");
  return dispatch1(def, {x, mask, source});
}

Tensor& masked_fill_(Tensor& self, const Tensor& mask, const Tensor& value) {
  check_writable("masked_fill_", self);
  return write_into("masked_fill_", self, masked_fill(read_self(self, {value}), mask, value));
}

// masked_scatter_ and scatter_ are the in-place forms of their ops (inplace_variant): the
// dispatcher checks the write, saves self before it and bumps the version.
Tensor& masked_scatter_(Tensor& self, const Tensor& mask, const Tensor& source) {
  static const OpDef& def = op_def("masked_scatter_");
  dispatch(def, {self, mask, source});
  return self;
}

Tensor& scatter_(Tensor& self, int64_t axis, const Tensor& index, const Tensor& src) {
  static const OpDef& def = op_def("scatter_");
  dispatch(def, {self, index, src}, {{"dim", axis}});
  return self;
}

Tensor& scatter_(Tensor& self, int64_t axis, const Tensor& index, double value) {
  return scatter_(self, axis, index, full_like(index, value, self.dtype()));
}

namespace {

// masked_scatter (x, mask, source): no split (source is read in the whole tensor's row-major
// order); P(sum) through x and source with a B mask (the result is linear in both).
Sigs masked_scatter_sbp(const SbpQuery&) {
  return {{{kPSum, kB, kPSum}, {kPSum}}};
}
const SbpRule kMaskedScatter{"masked_scatter", masked_scatter_sbp};

}  // namespace

OFL_REGISTER_OPS({
    {.name = "masked_select",
     .num_inputs = 2,
     .cost = elementwise_cost,
     .attrs = {{"count", AttrType::kInt}},
     .infer = infer_masked_select,
     .compute = compute_masked_select,
     .backward = masked_select_grad,
     .saves = kSaveInputs,
     .api = {{"masked_select(Tensor input, Tensor mask) -> Tensor", call_front<masked_select>()}}},
    {.name = "masked_scatter",
     .num_inputs = 3,
     .cost = elementwise_cost,
     .sbp = &kMaskedScatter,
     .attrs = {},
     .infer = infer_masked_scatter,
     .compute = compute_masked_scatter,
     .backward = masked_scatter_grad,
     .saves = kSaveInputs,
     .api = {{"masked_scatter(Tensor input, Tensor mask, Tensor source) -> Tensor",
              [](const CallArgs& a) {
                // Out of place, the input broadcasts with the mask (PyTorch's).
                const Tensor& x = a.tensor(0);
                const Shape both = broadcast_shapes(meta_of(x).shape, meta_of(a.tensor(1)).shape,
                                                    "masked_scatter");
                return masked_scatter(both == meta_of(x).shape ? x : expand(x, both), a.tensor(1),
                                      a.tensor(2));
              }}}},
});

OFL_REGISTER_OPS({with_api({{"masked_scatter_(Tensor input, Tensor mask, Tensor source) -> Tensor",
                             [](const CallArgs& a) {
                               Tensor self = a.tensor(0);
                               return masked_scatter_(self, a.tensor(1), a.tensor(2));
                             },
                             kMethod}},
                           inplace_variant("masked_scatter_", op_def("masked_scatter")))});

}  // namespace ofl::internal
