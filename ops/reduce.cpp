// Reduction op definitions. Kernels see a contiguous [outer, reduce, inner] block.
#include "ops/reduce.h"

#include <algorithm>
#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/global_op.h"
#include "ops/index_ops.h"
#include "ops/kernels.h"
#include "ops/op_def.h"
#include "ops/sbp_rules.h"
#include "ops/shape_ops.h"

namespace ofl {

using autograd::Grads;
using autograd::Needs;
using autograd::SavedTensor;

Axes reduction_axes(const Axes& axes, int64_t ndim, const char* op) {
  Axes out;
  if (axes.empty()) {
    for (int64_t d = 0; d < ndim; ++d) out.push_back(d);
    return out;
  }
  for (int64_t a : axes) out.push_back(normalize_axis(a, ndim, op));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    fail(op, "dimension appears more than once in the list of reduced dimensions");
  if (ndim == 0) out.clear();
  return out;
}

Shape reduced_shape(const Shape& shape, const Axes& axes, bool keepdim) {
  Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!reduced)
      out.push_back(shape[d]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

namespace {

struct Blocked {
  Tensor x;  // contiguous, reduced axes forming the middle block
  int64_t outer = 1, reduce = 1, inner = 1;
};

// Lays x out as [outer, reduce, inner] with the reduced axes in the middle.
Blocked block(const Tensor& x, const Axes& axes) {
  autograd::NoGradGuard no_grad;
  Blocked b;
  bool consecutive = !axes.empty() && axes.back() - axes.front() + 1 == (int64_t)axes.size();
  if (axes.empty()) {
    b.x = contiguous(x);
    b.outer = x.numel();
    return b;
  }
  if (consecutive && x.is_contiguous()) {
    b.x = x;
    for (int64_t d = 0; d < x.dim(); ++d) {
      if (d < axes.front())
        b.outer *= x.shape()[d];
      else if (d <= axes.back())
        b.reduce *= x.shape()[d];
      else
        b.inner *= x.shape()[d];
    }
    return b;
  }
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) {
      perm.push_back(d);
      b.outer *= x.shape()[d];
    }
  for (int64_t d : axes) {
    perm.push_back(d);
    b.reduce *= x.shape()[d];
  }
  b.x = contiguous(permute(x, perm));
  return b;
}

Tensor reduce(ReduceOp op, const char* name, const Tensor& x, const Axes& axes_in, bool keepdim,
              DType compute) {
  require_local(name, x);
  Axes axes = reduction_axes(axes_in, x.dim(), name);
  Blocked b = block(to_dtype(detach(x), compute), axes);
  if (b.reduce == 0 && (op == ReduceOp::kMax || op == ReduceOp::kMin))
    fail(name, "cannot reduce over a zero-size dimension of a tensor of shape ",
         shape_str(x.shape()));
  DType out_dtype = (op == ReduceOp::kAll || op == ReduceOp::kAny) ? DType::kBool : compute;
  Tensor out = Tensor::empty(reduced_shape(x.shape(), axes, keepdim), out_dtype, x.device());
  reduce_kernel().get(x.device().type)(op, b.x, b.outer, b.reduce, b.inner, out);
  return out;
}

// A reduction on a global tensor: the same front end on the shard. kind: the rule's (0 sum,
// 1 max, 2 min, 3 no partial); outputs: 1, or 2 for values and indices.
template <class F>
std::vector<Tensor> global_reduce(const char* name, int kind, const Tensor& x, const Axes& axes_in,
                                  bool keepdim, size_t outputs, F f) {
  Axes axes = reduction_axes(axes_in, x.dim(), name);
  std::vector<int64_t> attrs{kind, keepdim};
  attrs.insert(attrs.end(), axes.begin(), axes.end());
  Shape shape = reduced_shape(logical_shape(x), axes, keepdim);
  return run_global(
      {name,
       {x},
       std::vector<Shape>(outputs, shape),
       attrs,
       [f](const std::vector<Tensor>& l, const std::vector<Shape>&) { return f(l[0]); }});
}

// Re-inserts reduced axes as size 1 so a gradient broadcasts back over the input.
Tensor unreduce(const Tensor& g, const Shape& in_shape, const Axes& axes, bool keepdim) {
  Tensor r = g;
  if (!keepdim)
    for (int64_t a : axes) r = unsqueeze(r, a);
  return r;
}

Tensor extreme(ReduceOp op, const char* name, const Tensor& x, const Axes& axes_in, bool keepdim) {
  if (x.is_global())
    return global_reduce(name, op == ReduceOp::kMax ? 1 : 2, x, axes_in, keepdim, 1,
                         [=](const Tensor& l) {
                           return std::vector<Tensor>{extreme(op, name, l, axes_in, keepdim)};
                         })[0];
  Tensor out = reduce(op, name, x, axes_in, keepdim, x.dtype());
  if (autograd::needs_grad(x)) {
    Axes axes = reduction_axes(axes_in, x.dim(), name);
    autograd::record(name, {x}, {out},
                     [sx = SavedTensor(x), so = SavedTensor(out, true), axes, keepdim, name](
                         const Grads& g, const Needs&) -> Grads {
                       Tensor x = sx.unpack(name);
                       Tensor y = unreduce(so.unpack(name), x.shape(), axes, keepdim);
                       Tensor mask = to_dtype(eq(x, y), g[0].dtype());
                       Tensor count = sum(mask, axes, true);
                       Tensor gy = unreduce(g[0], x.shape(), axes, keepdim);
                       return {div(mul(mask, gy), count)};
                     });
  }
  return out;
}

std::pair<Tensor, Tensor> extreme_dim(bool is_max, const Tensor& x, int64_t axis, bool keepdim) {
  const char* name = is_max ? "max" : "min";
  if (x.dtype() == DType::kBool) fail<TypeError>(name, "is not supported for bool tensors");
  if (x.is_global()) {
    auto r = global_reduce(name, 3, x, {axis}, keepdim, 2, [=](const Tensor& l) {
      auto [v, i] = extreme_dim(is_max, l, axis, keepdim);
      return std::vector<Tensor>{v, i};
    });
    return {r[0], r[1]};
  }
  axis = normalize_axis(axis, x.dim(), name);
  Axes axes = x.dim() == 0 ? Axes{} : Axes{axis};
  Blocked b = block(detach(x), axes);
  if (b.reduce == 0)
    fail(name, "cannot reduce over a zero-size dimension of a tensor of shape ",
         shape_str(x.shape()));
  Shape shape = reduced_shape(x.shape(), axes, keepdim);
  Tensor values = Tensor::empty(shape, x.dtype(), x.device());
  Tensor indices = Tensor::empty(shape, DType::kInt64, x.device());
  arg_reduce_kernel().get(x.device().type)(is_max, b.x, b.outer, b.reduce, b.inner, values,
                                           indices);
  if (autograd::needs_grad(x)) {
    autograd::record(name, {x}, {values},
                     [shape = x.shape(), axis, keepdim, si = SavedTensor(indices), name](
                         const Grads& g, const Needs&) -> Grads {
                       Tensor idx = si.unpack(name), gv = g[0];
                       if (shape.empty()) return {reshape(gv, shape)};
                       if (!keepdim) {
                         idx = unsqueeze(idx, axis);
                         gv = unsqueeze(gv, axis);
                       }
                       return {scatter_add(zeros(shape, gv.dtype(), gv.device()), axis, idx, gv)};
                     });
  }
  return {values, indices};
}

}  // namespace

Tensor sum(const Tensor& x, const Axes& axes_in, bool keepdim, std::optional<DType> dtype) {
  if (x.is_global())
    return global_reduce("sum", 0, x, axes_in, keepdim, 1, [=](const Tensor& l) {
      return std::vector<Tensor>{sum(l, axes_in, keepdim, dtype)};
    })[0];
  DType dt = dtype.value_or(sum_dtype(x.dtype()));
  Tensor out = reduce(ReduceOp::kSum, "sum", x, axes_in, keepdim, dt);
  if (autograd::needs_grad(x)) {
    Axes axes = reduction_axes(axes_in, x.dim(), "sum");
    autograd::record(
        "sum", {x}, {out},
        [shape = x.shape(), dt = x.dtype(), axes, keepdim](const Grads& g, const Needs&) -> Grads {
          Tensor gy = unreduce(g[0], shape, axes, keepdim);
          return {to_dtype(contiguous(expand(gy, shape)), dt)};
        });
  }
  return out;
}

Tensor mean(const Tensor& x, const Axes& axes_in, bool keepdim) {
  if (!is_floating(x.dtype()))
    fail<TypeError>("mean", "expects a floating-point tensor, got ", x.str(),
                    "; cast it with .float() first");
  Axes axes = reduction_axes(axes_in, x.dim(), "mean");
  int64_t count = 1;
  for (int64_t a : axes) count *= logical_shape(x)[a];
  Tensor s = sum(x, axes_in, keepdim);
  return div(s, wrap_scalar(static_cast<double>(count), DType::kFloat64));
}

Tensor prod(const Tensor& x, const Axes& axes_in, bool keepdim) {
  if (x.is_global())
    return global_reduce("prod", 3, x, axes_in, keepdim, 1, [=](const Tensor& l) {
      return std::vector<Tensor>{prod(l, axes_in, keepdim)};
    })[0];
  Tensor out = reduce(ReduceOp::kProd, "prod", x, axes_in, keepdim, sum_dtype(x.dtype()));
  if (autograd::needs_grad(x)) {
    Axes axes = reduction_axes(axes_in, x.dim(), "prod");
    autograd::record("prod", {x}, {out},
                     [sx = SavedTensor(x), so = SavedTensor(out, true), axes, keepdim](
                         const Grads& g, const Needs&) -> Grads {
                       Tensor x = sx.unpack("prod");
                       Tensor y = unreduce(so.unpack("prod"), x.shape(), axes, keepdim);
                       Tensor gy = unreduce(g[0], x.shape(), axes, keepdim);
                       // d/dx_i is y / x_i, except at a zero: the product of the others there
                       // if it is the only zero of its slice, else 0.
                       Tensor zero = eq(x, wrap_scalar(0, DType::kInt64));
                       Tensor ones = ones_like(x);
                       Tensor lone = eq(sum(zero, axes, true), wrap_scalar(1, DType::kInt64));
                       Tensor others = prod(where(zero, ones, x), axes, true);
                       Tensor at_zero = where(lone, others, zeros_like(others));
                       return {mul(gy, where(zero, at_zero, div(y, where(zero, ones, x))))};
                     });
  }
  return out;
}

Tensor amax(const Tensor& x, const Axes& axes, bool keepdim) {
  return extreme(ReduceOp::kMax, "amax", x, axes, keepdim);
}
Tensor amin(const Tensor& x, const Axes& axes, bool keepdim) {
  return extreme(ReduceOp::kMin, "amin", x, axes, keepdim);
}
std::pair<Tensor, Tensor> max_dim(const Tensor& x, int64_t axis, bool keepdim) {
  return extreme_dim(true, x, axis, keepdim);
}
std::pair<Tensor, Tensor> min_dim(const Tensor& x, int64_t axis, bool keepdim) {
  return extreme_dim(false, x, axis, keepdim);
}

Tensor argmax(const Tensor& x, std::optional<int64_t> axis, bool keepdim) {
  if (!axis) return max_dim(reshape(detach(x), {-1}), 0, false).second;
  return max_dim(detach(x), normalize_axis(*axis, x.dim(), "argmax"), keepdim).second;
}
Tensor argmin(const Tensor& x, std::optional<int64_t> axis, bool keepdim) {
  if (!axis) return min_dim(reshape(detach(x), {-1}), 0, false).second;
  return min_dim(detach(x), normalize_axis(*axis, x.dim(), "argmin"), keepdim).second;
}

Tensor var(const Tensor& x, const Axes& axes_in, double correction, bool keepdim) {
  if (!is_floating(x.dtype()))
    fail<TypeError>("var", "expects a floating-point tensor, got ", x.str());
  Axes axes = reduction_axes(axes_in, x.dim(), "var");
  int64_t n = 1;
  for (int64_t a : axes) n *= logical_shape(x)[a];
  Tensor centered = sub(x, mean(x, axes_in, true));
  Tensor ss = sum(mul(centered, centered), axes_in, keepdim);
  double denom = std::max(0.0, static_cast<double>(n) - correction);
  return div(ss, wrap_scalar(denom, DType::kFloat64));
}

Tensor std(const Tensor& x, const Axes& axes, double correction, bool keepdim) {
  return sqrt(var(x, axes, correction, keepdim));
}

Tensor logsumexp(const Tensor& x, const Axes& axes, bool keepdim) {
  if (!is_floating(x.dtype()))
    fail<TypeError>("logsumexp", "expects a floating-point tensor, got ", x.str());
  reduction_axes(axes, x.dim(), "logsumexp");  // bad axes are reported as logsumexp's
  Tensor m = detach(amax(x, axes, true));
  // Rows that are all -inf would give nan from (-inf) - (-inf); shift them by 0 instead.
  m = where(logical_not(ne(abs(m), wrap_scalar(INFINITY, DType::kFloat64))), zeros_like(m), m);
  Tensor s = log(sum(exp(sub(x, m)), axes, true));
  Tensor out = add(s, m);
  return keepdim ? out : squeeze(out, reduction_axes(axes, x.dim(), "logsumexp"));
}

Tensor all(const Tensor& x, const Axes& axes, bool keepdim) {
  if (x.is_global())
    return global_reduce("all", 3, x, axes, keepdim, 1, [=](const Tensor& l) {
      return std::vector<Tensor>{all(l, axes, keepdim)};
    })[0];
  return reduce(ReduceOp::kAll, "all", to_dtype(x, DType::kBool), axes, keepdim, DType::kBool);
}
Tensor any(const Tensor& x, const Axes& axes, bool keepdim) {
  if (x.is_global())
    return global_reduce("any", 3, x, axes, keepdim, 1, [=](const Tensor& l) {
      return std::vector<Tensor>{any(l, axes, keepdim)};
    })[0];
  return reduce(ReduceOp::kAny, "any", to_dtype(x, DType::kBool), axes, keepdim, DType::kBool);
}

OFL_REGISTER_OPS({
    {.name = "sum", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kReduce},
    {.name = "mean", .num_inputs = 1, .cost = elementwise_cost},
    {.name = "prod", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kReduce},
    {.name = "amax", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kReduce},
    {.name = "amin", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kReduce},
    {.name = "max", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kReduce},
    {.name = "min", .num_inputs = 1, .cost = elementwise_cost, .sbp = &sbp_rules::kReduce},
    {.name = "var", .num_inputs = 1, .cost = elementwise_cost},
    {.name = "std", .num_inputs = 1, .cost = elementwise_cost},
    {.name = "logsumexp", .num_inputs = 1, .cost = elementwise_cost},
    {.name = "argmax",
     .num_inputs = 1,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kReduce},
    {.name = "argmin",
     .num_inputs = 1,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kReduce},
    {.name = "all",
     .num_inputs = 1,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kReduce},
    {.name = "any",
     .num_inputs = 1,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &sbp_rules::kReduce},
});

}  // namespace ofl
