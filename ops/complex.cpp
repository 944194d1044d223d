// complex64 and complex128 (ops/complex.h): view_as_complex and view_as_real are the only complex
// ops the dispatcher runs; every other complex op is a composite of float ops on the float pairs,
// and every op not marked complex raises "[op] is not supported for complex64 tensors".
#include "ops/complex.h"

#include "core/dispatcher.h"
#include "core/primitives.h"
#include "ops/creation.h"
#include "ops/elementwise_sbp.h"
#include "ops/index_ops.h"
#include "ops/join.h"
#include "ops/op_helpers.h"
#include "ops/shape_ops.h"

namespace ofl::internal {

using namespace elementwise_sbp;

namespace {

std::vector<TensorMeta> infer_view_as_complex(const InferArgs& a) {
  const TensorMeta& x = a.in[0];
  if (x.dtype != DType::kFloat32 && x.dtype != DType::kFloat64)
    fail<TypeError>(a.op, "is only supported for float32 and float64 tensors, got ", x.str());
  if (x.shape.empty()) fail(a.op, "Input tensor must have one or more dimensions");
  if (x.shape.back() != 2) fail(a.op, "Tensor must have a last dimension of size 2, got ", x.str());
  return single_output(Shape(x.shape.begin(), x.shape.end() - 1), complex_dtype_of(x.dtype),
                       x.device);
}

std::vector<Tensor> view_as_complex_view(const ViewArgs& v) {
  const Tensor& x = v.in[0];
  const char* op = "view_as_complex";
  if (x.strides().back() != 1) fail(op, "Tensor must have a last dimension with stride 1");
  for (int64_t d = 0; d + 1 < x.dim(); ++d)
    if (x.strides()[d] % 2 != 0)
      fail(op, "Tensor must have a stride divisible by 2 for all but last dimension (strides ",
           shape_str(x.strides()), ")");
  if (x.offset() % 2 != 0) fail(op, "Tensor must have a storage_offset divisible by 2");
  return {real_as_complex(x)};
}

std::vector<TensorMeta> infer_view_as_real(const InferArgs& a) {
  const TensorMeta& z = a.in[0];
  if (!is_complex(z.dtype))
    fail<TypeError>(a.op, "is only supported for complex tensors, got ", z.str());
  Shape shape = z.shape;
  shape.push_back(2);
  return single_output(std::move(shape), complex_part_dtype(z.dtype), z.device);
}

// Splits of the axes both sides share; no partials (boxing has no complex reductions).
Sigs complex_view_sbp(const SbpQuery& q) {
  const int64_t shared = std::min(rank_of(q.in[0]), rank_of(q.out[0]));
  Sigs sigs;
  for (int64_t d = 0; d < shared; ++d) sigs.push_back({{Sbp::split(d)}, {Sbp::split(d)}});
  return sigs;
}
const SbpRule kComplexView{"complex_view", complex_view_sbp};

// float32 or float64 operands of one dtype (PyTorch's complex and polar take no others).
void require_parts(const Tensor& a, const Tensor& b, const char* op) {
  const DType t = a.dtype();
  if ((t != DType::kFloat32 && t != DType::kFloat64) || b.dtype() != t)
    fail<TypeError>(op, "expects float32 or float64 tensors of one dtype, got ", a.str(), " and ",
                    b.str());
}

// (real, imaginary) of an operand as `part` floats; the imaginary part is undefined for a real one.
struct Parts {
  Tensor re, im;
};
Parts parts(const Tensor& x, DType part) {
  if (!is_complex(x.dtype())) return {x.dtype() == part ? x : to_dtype(x, part), Tensor()};
  const Tensor pair = view_as_real(x);
  const Tensor re = select(pair, -1, 0), im = select(pair, -1, 1);
  if (re.dtype() == part) return {re, im};
  return {to_dtype(re, part), to_dtype(im, part)};
}

// u + v, u - v, u * v where an undefined operand is zero.
Tensor plus(const Tensor& u, const Tensor& v) {
  return !u.defined() ? v : (!v.defined() ? u : add(u, v));
}
Tensor minus(const Tensor& u, const Tensor& v) {
  return !v.defined() ? u : (!u.defined() ? neg(v) : sub(u, v));
}
Tensor times(const Tensor& u, const Tensor& v) {
  return u.defined() && v.defined() ? mul(u, v) : Tensor();
}

// re + i im with the shape `shape` (an undefined im is zero).
Tensor assemble(const Tensor& re, const Tensor& im, const Shape& shape) {
  const Tensor i = im.defined() ? im : zeros_like(re);
  return view_as_complex(stack({expand(re, shape), expand(i, shape)}, -1));
}

}  // namespace

Tensor view_as_complex(const Tensor& x) {
  static const OpDef& def = op_def("view_as_complex");
  return dispatch1(def, {x});
}

Tensor view_as_real(const Tensor& z) {
  static const OpDef& def = op_def("view_as_real");
  return dispatch1(def, {z});
}

Tensor polar(const Tensor& abs, const Tensor& angle) {
  require_parts(abs, angle, "polar");
  const Tensor re = mul(abs, cos(angle)), im = mul(abs, sin(angle));
  return assemble(re, im, meta_of(re).shape);
}

Tensor complex(const Tensor& real, const Tensor& imag) {
  require_parts(real, imag, "complex");
  return assemble(real, imag,
                  broadcast_shapes(meta_of(real).shape, meta_of(imag).shape, "complex"));
}

Tensor real(const Tensor& z) {
  return is_complex(z.dtype()) ? select(view_as_real(z), -1, 0) : z;
}

Tensor imag(const Tensor& z) {
  if (!is_complex(z.dtype()))
    fail<TypeError>("imag", "is not implemented for tensors with non-complex dtypes (got ", z.str(),
                    ")");
  return select(view_as_real(z), -1, 1);
}

Tensor conj(const Tensor& z) {
  if (!is_complex(z.dtype())) return z;
  const Parts p = parts(z, complex_part_dtype(z.dtype()));
  return assemble(p.re, neg(p.im), meta_of(z).shape);
}

Tensor complex_abs(const Tensor& z) {
  const Parts p = parts(z, complex_part_dtype(z.dtype()));
  return hypot(p.re, p.im);
}

Tensor complex_binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = op == BinaryOp::kAdd   ? "add"
                     : op == BinaryOp::kSub ? "sub"
                     : op == BinaryOp::kMul ? "mul"
                                            : "div";
  const Shape shape = broadcast_shapes(meta_of(a).shape, meta_of(b).shape, name);
  const DType part = complex_part_dtype(result_type(a, b));
  const Parts x = parts(a, part), y = parts(b, part);
  switch (op) {
    case BinaryOp::kAdd:
      return assemble(add(x.re, y.re), plus(x.im, y.im), shape);
    case BinaryOp::kSub:
      return assemble(sub(x.re, y.re), minus(x.im, y.im), shape);
    case BinaryOp::kMul:  // (xr yr - xi yi) + i (xr yi + xi yr)
      return assemble(minus(mul(x.re, y.re), times(x.im, y.im)),
                      plus(times(x.re, y.im), times(x.im, y.re)), shape);
    case BinaryOp::kDiv: {  // x conj(y) / |y|^2
      const Tensor d = y.im.defined() ? add(mul(y.re, y.re), mul(y.im, y.im)) : y.re;
      if (!y.im.defined())
        return assemble(div(x.re, d), x.im.defined() ? div(x.im, d) : x.im, shape);
      return assemble(div(plus(mul(x.re, y.re), times(x.im, y.im)), d),
                      div(minus(times(x.im, y.re), mul(x.re, y.im)), d), shape);
    }
    default:
      OFL_CHECK(false, "complex_binary of ", name);
      return Tensor();
  }
}

OFL_REGISTER_OPS({
    {.name = "view_as_complex",
     .cost = view_cost,
     .sbp = &kComplexView,
     .infer = infer_view_as_complex,
     .view = view_as_complex_view,
     .backward =
         [](const BackwardArgs& b) { return std::vector<Tensor>{view_as_real(b.grads[0])}; },
     .complex = true,
     .api = {{"view_as_complex(Tensor input) -> Tensor", nullptr, kFunction}},
     .doc =
         "A float32 (float64) tensor of (real, imaginary) pairs in its last dimension as complex64 "
         "(complex128), a view"},
    {.name = "view_as_real",
     .cost = view_cost,
     .sbp = &kComplexView,
     .infer = infer_view_as_real,
     .view = [](const ViewArgs& v) { return std::vector<Tensor>{complex_as_real(v.in[0])}; },
     .backward =
         [](const BackwardArgs& b) {
           return std::vector<Tensor>{view_as_complex(contiguous(b.grads[0]))};
         },
     .complex = true,
     .api = {{"view_as_real(Tensor input) -> Tensor", nullptr, kFunction}},
     .doc = "A complex tensor as float (real, imaginary) pairs in a new last dimension (a view)"},
    {.name = "polar",
     .num_inputs = 2,
     .cost = elementwise_cost,
     .api = {{"polar(Tensor abs, Tensor angle) -> Tensor", call_front<polar>(), kFunction}},
     .doc = "The complex tensor abs * (cos(angle) + i sin(angle))"},
    {.name = "complex",
     .num_inputs = 2,
     .cost = elementwise_cost,
     .api = {{"complex(Tensor real, Tensor imag) -> Tensor", call_front<complex>(), kFunction}},
     .doc = "The complex tensor real + i imag (broadcast)"},
    {.name = "real",
     .cost = view_cost,
     .api = {{"real(Tensor input) -> Tensor", call_front<real>(), kFunction}},
     .doc = "The real part of a complex tensor (a view); a real tensor itself"},
    {.name = "imag",
     .cost = view_cost,
     .api = {{"imag(Tensor input) -> Tensor", call_front<imag>(), kFunction}},
     .doc = "The imaginary part of a complex tensor (a view)"},
    {.name = "conj",
     .cost = elementwise_cost,
     .api = {{"conj(Tensor input) -> Tensor", call_front<conj>()}},
     .doc = "The complex conjugate (a new tensor); a real tensor itself"},
});

}  // namespace ofl::internal
