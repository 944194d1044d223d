// matmul and linear. Every case reduces to one batched product on the BLAS.
#include "ops/linalg.h"

#include <algorithm>

#include "core/autograd/node.h"
#include "ops/elementwise.h"
#include "ops/global_op.h"
#include "ops/kernels.h"
#include "ops/op_def.h"
#include "ops/sbp_rules.h"
#include "ops/shape_ops.h"

namespace ofl {

using autograd::Grads;
using autograd::Needs;
using autograd::SavedTensor;

namespace {

// (batch..., n, k) @ (batch..., k, m) -> (batch..., n, m) with equal batch shapes. Operands
// may be any strided views, expanded batch dims included: the kernel reads them in place.
Tensor bmm(const Tensor& a, const Tensor& b) {
  const int64_t nd = a.dim();
  OFL_CHECK(nd >= 2 && b.dim() == nd && a.shape()[nd - 1] == b.shape()[nd - 2]);
  Shape shape(a.shape().begin(), a.shape().end() - 1);
  shape.push_back(b.shape().back());
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  matmul_kernel().get(a.device().type)(a, b, out);
  if (autograd::needs_grad(a, b)) {
    autograd::record(
        "matmul", {a, b}, {out},
        [sa = SavedTensor(a), sb = SavedTensor(b)](const Grads& g, const Needs& n) -> Grads {
          Tensor a = sa.unpack("matmul"), b = sb.unpack("matmul");
          return {n[0] ? bmm(g[0], transpose(b, -2, -1)) : Tensor(),
                  n[1] ? bmm(transpose(a, -2, -1), g[0]) : Tensor()};
        });
  }
  return out;
}

[[noreturn]] void inner_mismatch(const Tensor& a, const Tensor& b) {
  fail("matmul", "a is ", shape_str(a.shape()), ", b is ", shape_str(b.shape()),
       ": inner dimensions differ (", a.shape().back(), " vs ",
       b.dim() == 1 ? b.shape()[0] : b.shape()[b.dim() - 2], ")");
}

}  // namespace

Tensor matmul(const Tensor& a_in, const Tensor& b_in) {
  if (any_global({a_in, b_in})) {
    const Shape &sa = logical_shape(a_in), &sb = logical_shape(b_in);
    if (sa.empty() || sb.empty() || sa.back() != sb[sb.size() == 1 ? 0 : sb.size() - 2])
      fail("matmul", "a is ", shape_str(sa), ", b is ", shape_str(sb),
           ": inner dimensions differ or an operand is 0-d");
    Shape ba(sa.begin(), sa.end() - std::min<size_t>(sa.size(), 2));
    Shape bb(sb.begin(), sb.end() - std::min<size_t>(sb.size(), 2));
    Shape out = broadcast_shapes(ba, bb, "matmul");
    if (sa.size() >= 2) out.push_back(sa[sa.size() - 2]);
    if (sb.size() >= 2) out.push_back(sb.back());
    return run_global1("matmul", {a_in, b_in}, out, {},
                       [](const auto& l, const Shape&) { return matmul(l[0], l[1]); });
  }
  if (a_in.dim() == 0 || b_in.dim() == 0)
    fail("matmul", "both operands need at least one dimension, got ", shape_str(a_in.shape()),
         " and ", shape_str(b_in.shape()));
  if (a_in.device() != b_in.device())
    fail("matmul", "operands are on different devices: ", a_in.device().str(), " and ",
         b_in.device().str());
  DType dt = promote_types(a_in.dtype(), b_in.dtype());
  if (dt == DType::kBool) fail<TypeError>("matmul", "is not supported for bool tensors");
  Tensor a = to_dtype(a_in, dt), b = to_dtype(b_in, dt);
  const bool a_vec = a.dim() == 1, b_vec = b.dim() == 1;
  if (a_vec) a = unsqueeze(a, 0);
  if (b_vec) b = unsqueeze(b, 1);
  const int64_t n = a.shape()[a.dim() - 2], k = a.shape().back(), m = b.shape().back();
  if (b.shape()[b.dim() - 2] != k) inner_mismatch(a_in, b_in);

  Tensor out;
  if (b.dim() == 2 && a.is_contiguous()) {
    // Fold a's batch dims into its rows: one large GEMM instead of many small ones.
    Shape batch(a.shape().begin(), a.shape().end() - 2);
    out = bmm(reshape(a, {numel_of(batch) * n, k}), b);
    batch.insert(batch.end(), {n, m});
    out = reshape(out, batch);
  } else {
    Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
    for (size_t i = 1; i <= std::min(ba.size(), bb.size()); ++i) {
      int64_t da = ba[ba.size() - i], db = bb[bb.size() - i];
      if (da != db && da != 1 && db != 1)
        fail("matmul", "a is ", shape_str(a_in.shape()), ", b is ", shape_str(b_in.shape()),
             ": batch dimensions ", shape_str(ba), " and ", shape_str(bb), " cannot be broadcast");
    }
    Shape ea = broadcast_shapes(ba, bb, "matmul"), eb = ea;
    ea.insert(ea.end(), {n, k});
    eb.insert(eb.end(), {k, m});
    out = bmm(expand(a, ea), expand(b, eb));
  }
  if (a_vec) out = squeeze(out, std::vector<int64_t>{out.dim() - 2});
  if (b_vec) out = squeeze(out, std::vector<int64_t>{out.dim() - 1});
  return out;
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  const Shape &xs = logical_shape(x), &ws = logical_shape(w);
  if (w.dim() != 2) fail("linear", "weight must be 2-d, got ", shape_str(ws));
  if (x.dim() == 0 || xs.back() != ws[1])
    fail("linear", "input ", shape_str(xs), " and weight ", shape_str(ws),
         ": the input's last dimension must equal the weight's in_features (", ws[1], ")");
  Tensor y = matmul(x, transpose(w, 0, 1));
  if (!bias.defined()) return y;
  if (bias.dim() != 1 || logical_shape(bias)[0] != ws[0])
    fail("linear", "bias of shape ", shape_str(logical_shape(bias)),
         " does not match out_features ", ws[0]);
  return add(y, bias);
}

OFL_REGISTER_OPS({
    {.name = "matmul", .num_inputs = 2, .cost = matmul_cost, .sbp = &sbp_rules::kMatmul},
    {.name = "linear", .num_inputs = 3, .cost = matmul_cost},
});

}  // namespace ofl
