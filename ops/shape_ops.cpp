// View and layout ops. Views share storage; their backward maps the gradient back.
// Over 600 lines: every view op with the op its backward calls (a view and its inverse side by
// side).
#include "ops/shape_ops.h"

#include <algorithm>
#include <limits>

#include "core/dispatcher.h"
#include "core/primitives.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/elementwise_sbp.h"
#include "ops/index_ops.h"
#include "ops/join.h"
#include "ops/op_helpers.h"
#include "ops/reduce.h"

namespace ofl::internal {

using namespace elementwise_sbp;

namespace {

Tensor view_of(const Tensor& x, Shape shape, Shape strides, int64_t offset) {
  return Tensor::view_of(x.storage(), std::move(shape), std::move(strides), offset, x.dtype());
}

// Strides that let `shape` view x's memory without a copy (PyTorch's computeStride).
std::optional<Shape> view_strides(const Tensor& x, const Shape& shape) {
  const Shape& old = x.shape();
  const Shape& old_strides = x.strides();
  Shape out(shape.size());
  if (old.empty() || x.numel() == 0) return contiguous_strides(shape);
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old.size()) - 1; d >= 0; --d) {
    tensor_numel *= old[d];
    if (d == 0 || (old[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_base)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base = old_strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

// x's elements as `shape` (same numel): a view where the strides allow one, else a contiguous
// copy, or `view`'s error when no copy is allowed.
Tensor reshaped(const Tensor& x, const Shape& shape, bool may_copy) {
  if (auto strides = view_strides(x, shape))
    return view_of(x, shape, std::move(*strides), x.offset());
  if (!may_copy)
    fail("view", "a tensor of shape ", shape_str(x.shape()), " with strides ",
         shape_str(x.strides()), " cannot be viewed as ", shape_str(shape),
         " without a copy; use reshape()");
  Tensor out = view_of(contiguous_copy(x), shape, contiguous_strides(shape), 0);
  out.impl()->is_view = false;
  return out;
}

// The ops that only regroup dimensions (view, reshape, squeeze, unsqueeze, flatten) share their
// view and backward: the output meta gives the target shape (a shard's on global tensors).
std::vector<Tensor> regroup(const ViewArgs& v) {
  return {reshaped(v.in[0], v.out[0].shape, true)};
}
std::vector<Tensor> regroup_without_copy(const ViewArgs& v) {
  return {reshaped(v.in[0], v.out[0].shape, false)};
}
std::vector<Tensor> regroup_grad(const BackwardArgs& b) {
  return {reshape(b.grads[0], b.in_meta[0].shape)};
}

// reshape / view / flatten / squeeze / unsqueeze: a split maps through merged or split
// dimensions when it sits on the leading dimension of its group and the pieces coincide;
// partials pass.
Sigs reshape_sbp(const SbpQuery& q) {
  const Shape &in = q.in[0], &out = q.out[0];
  Sigs sigs;
  for (const Sbp& p : {kPSum, kPMax, kPMin}) sigs.push_back({{p}, {p}});
  if (std::find(in.begin(), in.end(), 0) != in.end()) return sigs;
  // Walk matching groups of dimensions: in[i0, i) holds as many elements as out[j0, j).
  size_t i = 0, j = 0;
  while (i < in.size() || j < out.size()) {
    size_t i0 = i, j0 = j;
    int64_t pi = i < in.size() ? in[i++] : 1, pj = j < out.size() ? out[j++] : 1;
    while (pi != pj) {
      if (pi < pj && i < in.size())
        pi *= in[i++];
      else if (pj < pi && j < out.size())
        pj *= out[j++];
      else
        return sigs;  // inconsistent shapes: leave it to the op's own check
    }
    auto lead = [](const Shape& s, size_t b, size_t e) {
      for (size_t k = b; k < e; ++k)
        if (s[k] > 1) return static_cast<int64_t>(k);
      return int64_t{-1};
    };
    int64_t d = lead(in, i0, i), o = lead(out, j0, j);
    if (d < 0 || o < 0) continue;
    if (in[d] == out[o] || (in[d] % q.parallel_num == 0 && out[o] % q.parallel_num == 0))
      sigs.push_back({{Sbp::split(d)}, {Sbp::split(o)}});
  }
  return sigs;
}
const SbpRule kReshape{"reshape", reshape_sbp};

std::vector<TensorMeta> shaped(const InferArgs& a, Shape shape) {
  return single_output(std::move(shape), a.in[0].dtype, a.in[0].device);
}

std::vector<TensorMeta> infer_reshape(const InferArgs& a) {
  return shaped(a, infer_shape(a.attrs.get<Shape>("shape"), numel_of(a.in[0].shape), a.op));
}

std::vector<TensorMeta> infer_squeeze(const InferArgs& a) {
  const Shape& in = a.in[0].shape;
  const int64_t n = static_cast<int64_t>(in.size());
  std::vector<bool> drop(n, false);
  for (int64_t d : a.attrs.get<Shape>("dims")) {
    d = normalize_axis(d, n, a.op);
    if (n > 0 && in[d] == 1) drop[d] = true;
  }
  Shape out;
  for (int64_t d = 0; d < n; ++d)
    if (!drop[d]) out.push_back(in[d]);
  return shaped(a, std::move(out));
}

std::vector<TensorMeta> infer_unsqueeze(const InferArgs& a) {
  Shape out = a.in[0].shape;
  const int64_t d = a.attrs.axis("dim", out.size() + 1, a.op);
  out.insert(out.begin() + d, 1);
  return shaped(a, std::move(out));
}

std::vector<TensorMeta> infer_flatten(const InferArgs& a) {
  const Shape& in = a.in[0].shape;
  if (in.empty()) return shaped(a, {1});
  const int64_t n = static_cast<int64_t>(in.size());
  const int64_t start = a.attrs.axis("start_dim", n, a.op);
  const int64_t end = a.attrs.axis("end_dim", n, a.op);
  if (start > end) fail(a.op, "start_dim ", start, " comes after end_dim ", end);
  Shape out(in.begin(), in.begin() + start);
  out.push_back(numel_of(Shape(in.begin() + start, in.begin() + end + 1)));
  out.insert(out.end(), in.begin() + end + 1, in.end());
  return shaped(a, std::move(out));
}

// --- permute ---

std::vector<int64_t> permutation(const InferArgs& a) {
  const Shape& dims = a.attrs.get<Shape>("dims");
  const int64_t n = static_cast<int64_t>(a.in[0].shape.size());
  if (static_cast<int64_t>(dims.size()) != n)
    fail(a.op, "got ", dims.size(), " dims for a tensor of shape ", shape_str(a.in[0].shape));
  std::vector<int64_t> perm;
  perm.reserve(n);
  for (int64_t d : dims) {
    perm.push_back(normalize_axis(d, n, a.op));
    if (std::count(perm.begin(), perm.end(), perm.back()) > 1)
      fail(a.op, "dimension ", perm.back(), " repeats in the permutation");
  }
  return perm;
}

std::vector<TensorMeta> infer_permute(const InferArgs& a) {
  const std::vector<int64_t> perm = permutation(a);
  Shape out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = a.in[0].shape[perm[i]];
  return shaped(a, std::move(out));
}

std::vector<Tensor> permute_view(const ViewArgs& v) {
  const Tensor& x = v.in[0];
  const Shape& dims = v.attrs.get<Shape>("dims");
  Shape shape(dims.size()), strides(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = dims[i] < 0 ? dims[i] + x.dim() : dims[i];
    shape[i] = x.shape()[d];
    strides[i] = x.strides()[d];
  }
  return {view_of(x, std::move(shape), std::move(strides), x.offset())};
}

std::vector<Tensor> permute_grad(const BackwardArgs& b) {
  const Shape& dims = b.attrs.get<Shape>("dims");
  const int64_t n = static_cast<int64_t>(dims.size());
  std::vector<int64_t> inverse(n);
  for (int64_t i = 0; i < n; ++i) inverse[dims[i] < 0 ? dims[i] + n : dims[i]] = i;
  return {permute(b.grads[0], inverse)};
}

// permute / transpose (typed attr dims): a split follows its axis; partials pass.
Sigs permute_sbp(const SbpQuery& q) {
  Sigs sigs;
  const std::vector<int64_t>& dims = q.typed->get<std::vector<int64_t>>("dims");
  const int64_t n = rank_of(q.in[0]);
  for (int64_t i = 0; i < n; ++i)
    sigs.push_back({{Sbp::split(dims[i] < 0 ? dims[i] + n : dims[i])}, {Sbp::split(i)}});
  for (const Sbp& p : {kPSum, kPMax, kPMin}) sigs.push_back({{p}, {p}});
  return sigs;
}
const SbpRule kPermute{"permute", permute_sbp};

// --- expand ---

std::vector<TensorMeta> infer_expand(const InferArgs& a) {
  const Shape& in = a.in[0].shape;
  Shape out = a.attrs.get<Shape>("shape");
  if (out.size() < in.size())
    fail(a.op, "cannot expand shape ", shape_str(in), " to fewer dimensions ", shape_str(out));
  const size_t off = out.size() - in.size();
  for (size_t i = 0; i < out.size(); ++i) {
    if (i < off) {
      if (out[i] < 0) fail(a.op, "-1 is not allowed for a new leading dimension");
      continue;
    }
    const int64_t have = in[i - off];
    if (out[i] == -1) out[i] = have;
    if (have != out[i] && have != 1)
      fail(a.op, "the expanded size ", out[i], " must match the existing size ", have,
           " at dimension ", i, " (shape ", shape_str(in), ")");
  }
  return shaped(a, std::move(out));
}

std::vector<Tensor> expand_view(const ViewArgs& v) {
  const Tensor& x = v.in[0];
  const Shape& shape = v.out[0].shape;
  const size_t off = shape.size() - x.dim();
  Shape strides(shape.size(), 0);
  for (size_t i = off; i < shape.size(); ++i)
    if (x.shape()[i - off] == shape[i]) strides[i] = x.strides()[i - off];
  return {view_of(x, shape, strides, x.offset())};
}

// expand: splits of kept axes map; new or size-1 axes may be split from B; partials pass.
Sigs expand_sbp(const SbpQuery& q) {
  const Shape &in = q.in[0], &out = q.out[0];
  Sigs sigs;
  for (int64_t d = 0; d < rank_of(out); ++d) {
    int64_t di = d - (rank_of(out) - rank_of(in));
    bool kept = di >= 0 && in[di] == out[d];
    sigs.push_back({{kept ? Sbp::split(di) : kB}, {Sbp::split(d)}});
  }
  for (const Sbp& p : {kPSum, kPMax, kPMin}) sigs.push_back({{p}, {p}});
  return sigs;
}
const SbpRule kExpand{"expand", expand_sbp};

// --- clone ---

std::vector<TensorMeta> infer_same(const InferArgs& a) {
  return shaped(a, a.in[0].shape);
}

void compute_clone(const ComputeArgs& c) {
  copy_kernel().get(c.out[0].device().type)(c.in[0], c.out[0]);
}

// A view that is its input where the shape stays.
bool same_shape(const Attrs&, const Shape& in, const Shape& out) {
  return in == out;
}

OpDef regroup_def(const char* name, std::vector<AttrDef> attrs,
                  std::vector<TensorMeta> (*infer)(const InferArgs&)) {
  return {.name = name,
          .cost = view_cost,
          .sbp = &kReshape,
          .attrs = std::move(attrs),
          .infer = infer,
          .view = regroup,
          .identity = same_shape,
          .backward = regroup_grad,
          .complex = true};
}

}  // namespace

Shape infer_shape(Shape shape, int64_t numel, const char* op) {
  int64_t known = 1, infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer_at >= 0) fail(op, "only one dimension can be -1 in ", shape_str(shape));
      infer_at = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      fail(op, "invalid dimension ", shape[i], " in ", shape_str(shape));
    } else {
      known *= shape[i];
    }
  }
  if (infer_at >= 0) {
    if (known == 0 || numel % known != 0)
      fail(op, "shape ", shape_str(shape), " is invalid for input of size ", numel);
    shape[infer_at] = numel / known;
  } else if (known != numel) {
    fail(op, "shape ", shape_str(shape), " is invalid for input of size ", numel);
  }
  return shape;
}

Tensor view(const Tensor& x, Shape shape) {
  static const OpDef& def = op_def("view");
  return dispatch1(def, {x}, {{"shape", std::move(shape)}});
}

Tensor reshape(const Tensor& x, Shape shape) {
  static const OpDef& def = op_def("reshape");
  return dispatch1(def, {x}, {{"shape", std::move(shape)}});
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& dims) {
  static const OpDef& def = op_def("permute");
  return dispatch1(def, {x}, {{"dims", dims}});
}

Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) {
  std::vector<int64_t> dims(x.dim());
  for (int64_t i = 0; i < x.dim(); ++i) dims[i] = i;
  if (x.dim() == 0) return permute(x, dims);
  std::swap(dims[normalize_axis(d0, x.dim(), "transpose")],
            dims[normalize_axis(d1, x.dim(), "transpose")]);
  return permute(x, dims);
}

Tensor expand(const Tensor& x, Shape shape) {
  static const OpDef& def = op_def("expand");
  return dispatch1(def, {x}, {{"shape", std::move(shape)}});
}

Tensor squeeze(const Tensor& x, std::optional<std::vector<int64_t>> axes) {
  static const OpDef& def = op_def("squeeze");
  std::vector<int64_t> dims;
  if (axes)
    dims = std::move(*axes);
  else
    for (int64_t d = 0; d < x.dim(); ++d) dims.push_back(d);
  return dispatch1(def, {x}, {{"dims", std::move(dims)}});
}

Tensor unsqueeze(const Tensor& x, int64_t axis) {
  static const OpDef& def = op_def("unsqueeze");
  return dispatch1(def, {x}, {{"dim", axis}});
}

Tensor flatten(const Tensor& x, int64_t start, int64_t end) {
  static const OpDef& def = op_def("flatten");
  return dispatch1(def, {x}, {{"start_dim", start}, {"end_dim", end}});
}

Tensor contiguous(const Tensor& x) {
  return x.is_contiguous() ? x : clone(x);
}

Tensor clone(const Tensor& x) {
  static const OpDef& def = op_def("clone");
  return dispatch1(def, {x});
}

Tensor detach(const Tensor& x) {
  Tensor out = x.alias();  // same memory and layout (and graph value, when traced), no history
  out.impl()->global = x.impl()->global;
  out.impl()->is_view = x.impl()->is_view;
  return out;
}

Tensor view_as_dtype(const Tensor& x, DType dtype) {
  if (itemsize(dtype) != itemsize(x.dtype()))
    fail("view", "cannot view ", dtype_name(x.dtype()), " as ", dtype_name(dtype),
         ": element sizes differ");
  return Tensor::view_of(x.storage(), x.shape(), x.strides(), x.offset(), dtype);
}

Tensor sum_to(const Tensor& g, const Shape& shape) {
  const Shape have = meta_of(g).shape;
  if (have == shape) return g;
  const int64_t lead = static_cast<int64_t>(have.size()) - static_cast<int64_t>(shape.size());
  OFL_CHECK(lead >= 0, "sum_to ", shape_str(have), " -> ", shape_str(shape));
  Axes axes;
  for (int64_t d = 0; d < static_cast<int64_t>(have.size()); ++d)
    if (d < lead || (shape[d - lead] == 1 && have[d] != 1)) axes.push_back(d);
  Tensor r = axes.empty() ? g : sum(g, axes, true);
  return reshape(r, shape);
}

const AttrDef kShapeAttr{"shape", AttrType::kInts};
namespace {

// x.unflatten(dim, sizes): dimension dim as the dimensions sizes.
Tensor unflatten(const CallArgs& a) {
  const Tensor& x = a.tensor(0);
  const int64_t dim = normalize_axis(a.integer(1), x.dim(), "unflatten");
  Shape s(x.shape().begin(), x.shape().begin() + dim);
  s.insert(s.end(), a.ints(2).begin(), a.ints(2).end());
  s.insert(s.end(), x.shape().begin() + dim + 1, x.shape().end());
  return reshape(x, s);
}

// x.t(): a matrix's transpose; 0-d and 1-d tensors as they are.
Tensor transpose_2d(const CallArgs& a) {
  const Tensor& x = a.tensor(0);
  if (x.dim() > 2) fail("t", "expects a tensor with <= 2 dimensions, got ", shape_str(x.shape()));
  return x.dim() < 2 ? x : transpose(x, 0, 1);
}

// x.movedim(source, destination): the dimensions in source moved to those in destination, the
// others in their order.
Tensor movedim(const CallArgs& a) {
  const Tensor& x = a.tensor(0);
  const std::vector<int64_t>&src = a.ints(1), &dst = a.ints(2);
  if (src.size() != dst.size())
    fail("movedim", "source and destination must name as many dims, got ", src.size(), " and ",
         dst.size());
  std::vector<int64_t> order(size_t(x.dim()), -1);
  std::vector<char> moved(size_t(x.dim()), 0);
  for (size_t i = 0; i < src.size(); ++i) {
    const int64_t from = normalize_axis(src[i], x.dim(), "movedim");
    const int64_t to = normalize_axis(dst[i], x.dim(), "movedim");
    if (moved[size_t(from)] || order[size_t(to)] != -1)
      fail("movedim", "repeated dim in source or destination");
    order[size_t(to)] = from;
    moved[size_t(from)] = 1;
  }
  int64_t next = 0;
  for (int64_t& o : order) {
    if (o != -1) continue;
    while (moved[size_t(next)]) ++next;
    o = next++;
  }
  return permute(x, order);
}

// x.repeat(r0, r1, ...): x tiled r_i times along each dimension (leading ones added), as
// expand over an interleaved unit dimension per axis, then a reshape.
Tensor repeat(const Tensor& x, const std::vector<int64_t>& reps) {
  if (reps.size() < size_t(x.dim()))
    fail("repeat", "needs at least as many repeats as dimensions: ", reps.size(), " for ",
         shape_str(meta_of(x).shape));
  for (int64_t r : reps)
    if (r < 0) fail("repeat", "repeats must be non-negative, got ", r);
  Shape shape(reps.size() - size_t(x.dim()), 1);
  const Shape own = meta_of(x).shape;
  shape.insert(shape.end(), own.begin(), own.end());
  Shape spread, tiled, out;
  for (size_t i = 0; i < reps.size(); ++i) {
    spread.insert(spread.end(), {1, shape[i]});
    tiled.insert(tiled.end(), {reps[i], shape[i]});
    out.push_back(reps[i] * shape[i]);
  }
  return reshape(expand(reshape(x, spread), tiled), out);
}

// x.repeat_interleave(r, dim): each element repeated r times in place along dim (the flattened
// tensor without dim).
Tensor repeat_interleave(const CallArgs& a) {
  Tensor x = a.tensor(0);
  const int64_t r = a.integer(1);
  if (r < 0) fail("repeat_interleave", "repeats must be non-negative, got ", r);
  if (a.is_none(2)) x = flatten(x);
  const int64_t dim = a.is_none(2) ? 0 : normalize_axis(a.integer(2), x.dim(), "repeat_interleave");
  Shape shape = meta_of(x).shape;
  Tensor spread = unsqueeze(x, dim + 1);
  Shape tiled = meta_of(spread).shape;
  tiled[size_t(dim + 1)] = r;
  shape[size_t(dim)] *= r;
  return reshape(expand(spread, tiled), shape);
}

// x.repeat_interleave(repeats, dim) with a tensor of counts (one, or one per slice along dim):
// an index_select by indices built on the host, since the output's length is their sum.
Tensor repeat_interleave_by(Tensor x, const Tensor& repeats, std::optional<int64_t> dim) {
  const char* op = "repeat_interleave";
  if (is_floating(repeats.dtype()) || repeats.dim() > 1)
    fail<TypeError>(op, "repeats must be an integer tensor of 0 or 1 dims, got ", repeats.str());
  if (repeats.device().is_meta() || x.device().is_meta())
    fail(op,
         "with a repeats tensor the output's size depends on its values, which a meta tensor "
         "does not have");
  if (!dim) x = flatten(x);
  const int64_t d = dim ? normalize_axis(*dim, x.dim(), op) : 0;
  const int64_t n = meta_of(x).shape[size_t(d)];
  const Tensor counts = contiguous(to_device(to_dtype(repeats, DType::kInt64), Device{}));
  const int64_t m = counts.numel();
  if (m != 1 && m != n)
    fail(op, "repeats must have one element or ", n, " (the size of dim ", d, "), got ", m);
  const int64_t* r = counts.data<int64_t>();
  std::vector<int64_t> picks;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t times = r[m == 1 ? 0 : i];
    if (times < 0) fail(op, "repeats must be non-negative, got ", times);
    picks.insert(picks.end(), size_t(times), i);
  }
  Tensor index = Tensor::empty({int64_t(picks.size())}, DType::kInt64);
  std::copy(picks.begin(), picks.end(), index.data<int64_t>());
  return index_select(x, d, to_device(index, x.device()));
}

// F.pad(x, pad, "constant", value): pad = (last dim's before, after, the one before's, ...);
// negative amounts crop. The fill is full_like of a slice of x, so a global x stays global.
Tensor pad(const CallArgs& a) {
  Tensor x = a.tensor(0);
  const std::vector<int64_t>& amounts = a.ints(1);
  const std::string& mode = a.str(2);
  if (mode != "constant") fail("pad", "mode '", mode, "' is not implemented (only 'constant')");
  if (amounts.size() % 2 || amounts.size() / 2 > size_t(x.dim()))
    fail("pad", "expects an even number of amounts, at most two per dimension of ",
         shape_str(meta_of(x).shape), ", got ", amounts.size());
  const double value = a.optional_number(3).value_or(0.0);
  for (size_t i = 0; i < amounts.size() / 2; ++i) {
    const int64_t dim = x.dim() - 1 - int64_t(i);
    int64_t before = amounts[2 * i], after = amounts[2 * i + 1];
    const int64_t size = meta_of(x).shape[size_t(dim)];
    if (size + std::min<int64_t>(before, 0) + std::min<int64_t>(after, 0) < 0)
      fail("pad", "crops dimension ", dim, " of ", shape_str(meta_of(x).shape), " below 0");
    if (before < 0 || after < 0) {
      const int64_t start = std::max<int64_t>(-before, 0);
      x = narrow(x, dim, start, size - start - std::max<int64_t>(-after, 0));
      before = std::max<int64_t>(before, 0);
      after = std::max<int64_t>(after, 0);
    }
    if (!before && !after) continue;
    if (meta_of(x).shape[size_t(dim)] == 0)
      fail("pad", "cannot pad an empty dimension ", dim, " of ", shape_str(meta_of(x).shape));
    const Tensor fill = full_like(narrow(x, dim, 0, 1), value);
    const auto block = [&](int64_t n) {
      Shape s = meta_of(x).shape;
      s[size_t(dim)] = n;
      return expand(fill, s);
    };
    std::vector<Tensor> parts;
    if (before) parts.push_back(block(before));
    parts.push_back(x);
    if (after) parts.push_back(block(after));
    x = cat(parts, dim);
  }
  return x;
}

std::vector<Tensor> unbind(const CallArgs& a) {
  const Tensor& x = a.tensor(0);
  const int64_t dim = normalize_axis(a.integer(1), x.dim(), "unbind");
  std::vector<Tensor> out;
  for (int64_t i = 0; i < meta_of(x).shape[size_t(dim)]; ++i) out.push_back(select(x, dim, i));
  return out;
}

}  // namespace

OFL_REGISTER_OPS({
    {.name = "movedim",
     .api = {{"movedim(Tensor input, int[] source, int[] destination) -> Tensor", movedim},
             {"moveaxis(Tensor input, int[] source, int[] destination) -> Tensor", movedim},
             {"swapaxes(Tensor input, int axis0, int axis1) -> Tensor", call_front<transpose>()},
             {"swapdims(Tensor input, int dim0, int dim1) -> Tensor", call_front<transpose>()}},
     .doc = "A view with one dimension moved (movedim) or two exchanged (swapaxes)"},
    {.name = "broadcast_to",
     .api = {{"broadcast_to(Tensor input, int[] size) -> Tensor", call_front<expand>()}},
     .doc = "The tensor broadcast to `size` (expand)"},
    {.name = "repeat",
     .api = {{"repeat(Tensor input, int[] repeats) -> Tensor", call_front<repeat>(), kMethod},
             {"tile(Tensor input, int[] dims) -> Tensor",
              [](const CallArgs& a) {
                const Tensor& x = a.tensor(0);
                std::vector<int64_t> dims = a.ints(1);  // fewer than x's: ones in front
                if (dims.size() < size_t(x.dim()))
                  dims.insert(dims.begin(), x.dim() - dims.size(), 1);
                return repeat(x, dims);
              }}},
     .doc = "The tensor tiled along each dimension"},
    {.name = "repeat_interleave",
     .api =
         {{"repeat_interleave(Tensor input, int repeats, int? dim=None, *, int? output_size=None) "
           "-> Tensor",
           repeat_interleave},
          {"repeat_interleave(Tensor input, Tensor repeats, int? dim=None, *, int? "
           "output_size=None) -> Tensor",
           [](const CallArgs& a) {  // output_size: a hint for devices that cannot sync
             return repeat_interleave_by(a.tensor(0), a.tensor(1), a.optional_integer(2));
           }},
          {"repeat_interleave(Tensor repeats) -> Tensor",
           [](const CallArgs& a) {
             const Tensor& r = a.tensor(0);
             const int64_t n = r.dim() == 0 ? 1 : meta_of(r).shape[0];
             return repeat_interleave_by(arange(0, double(n), 1, DType::kInt64, r.device()), r, 0);
           },
           kFunction}},
     .doc = "Each element repeated in place along dim (of the flattened tensor without one)"},
    {.name = "pad",
     .api = {{"pad(Tensor input, int[] pad, str mode='constant', float? value=None) -> Tensor", pad,
              kInternal}},
     .doc = "The tensor padded with a constant (F.pad); negative amounts crop"},
    {.name = "unbind",
     .api = {{"unbind(Tensor input, int dim=0) -> Tensor[]", unbind}},
     .doc = "The slices along dim, each without it"},
    {.name = "view",
     .cost = view_cost,
     .sbp = &kReshape,
     .attrs = {kShapeAttr},
     .infer = infer_reshape,
     .view = regroup_without_copy,
     .identity = same_shape,
     .backward = regroup_grad,
     .complex = true,
     .api = {{"view(Tensor input, int[] shape) -> Tensor", call_front<view>(), kMethod},
             {"view(Tensor input, dtype dtype) -> Tensor", call_front<view_as_dtype>(), kMethod},
             {"view_as(Tensor input, Tensor other) -> Tensor",
              [](const CallArgs& a) { return view(a.tensor(0), a.tensor(1).shape()); }, kMethod}}},
    with_api({{"reshape(Tensor input, int[] shape) -> Tensor", call_front<reshape>()},
              {"reshape_as(Tensor input, Tensor other) -> Tensor",
               [](const CallArgs& a) { return reshape(a.tensor(0), a.tensor(1).shape()); },
               kMethod},
              {"unflatten(Tensor input, int dim, int[] sizes) -> Tensor", unflatten}},
             regroup_def("reshape", {kShapeAttr}, infer_reshape)),
    with_api({{"squeeze(Tensor input, int[]? dim=None) -> Tensor",
               [](const CallArgs& a) {
                 if (a.is_none(1)) return squeeze(a.tensor(0));
                 return squeeze(a.tensor(0), a.ints(1));
               }}},
             regroup_def("squeeze", {{"dims", AttrType::kInts}}, infer_squeeze)),
    with_api({{"unsqueeze(Tensor input, int dim) -> Tensor", call_front<unsqueeze>()}},
             regroup_def("unsqueeze", {{"dim", AttrType::kInt}}, infer_unsqueeze)),
    with_api({{"flatten(Tensor input, int start_dim=0, int end_dim=-1) -> Tensor",
               call_front<flatten>()}},
             regroup_def("flatten", {{"start_dim", AttrType::kInt}, {"end_dim", AttrType::kInt}},
                         infer_flatten)),
    {.name = "permute",
     .cost = view_cost,
     .sbp = &kPermute,
     .attrs = {{"dims", AttrType::kInts}},
     .infer = infer_permute,
     .view = permute_view,
     .identity =
         [](const Attrs& attrs, const Shape&, const Shape&) {
           const auto& dims = attrs.get<std::vector<int64_t>>("dims");
           for (size_t d = 0; d < dims.size(); ++d)
             if (dims[d] != int64_t(d) && dims[d] != int64_t(d) - int64_t(dims.size()))
               return false;
           return true;
         },
     .backward = permute_grad,
     .complex = true,
     .api = {{"permute(Tensor input, int[] dims) -> Tensor", call_front<permute>()}}},
    {.name = "transpose",
     .sbp = &kPermute,
     .api = {{"transpose(Tensor input, int dim0, int dim1) -> Tensor", call_front<transpose>()},
             {"t(Tensor input) -> Tensor", transpose_2d}}},
    {.name = "expand",
     .cost = view_cost,
     .sbp = &kExpand,
     .attrs = {kShapeAttr},
     .infer = infer_expand,
     .view = expand_view,
     .identity = same_shape,
     .backward =
         [](const BackwardArgs& b) {
           return std::vector<Tensor>{sum_to(b.grads[0], b.in_meta[0].shape)};
         },
     .complex = true,
     .api = {{"expand(Tensor input, int[] size) -> Tensor", call_front<expand>(), kMethod},
             {"expand_as(Tensor input, Tensor other) -> Tensor",
              [](const CallArgs& a) { return expand(a.tensor(0), a.tensor(1).shape()); },
              kMethod}}},
    {.name = "contiguous",
     .sbp = &kIdentity,
     .api = {{"contiguous(Tensor input) -> Tensor", call_front<contiguous>()}}},
    {.name = "clone",
     .cost = elementwise_cost,
     .sbp = &kIdentity,
     .infer = infer_same,
     .compute = compute_clone,
     .backward = [](const BackwardArgs& b) { return std::vector<Tensor>{b.grads[0]}; },
     .complex = true,
     .api = {unary_api("clone")}},
    {.name = "detach",
     .differentiable = false,
     .sbp = &kIdentity,
     .api = {{"detach(Tensor input) -> Tensor", call_front<detach>()}}},
});

}  // namespace ofl::internal
