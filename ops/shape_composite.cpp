// Layout functions of torch.* written as other ops (so autograd, meta and graph mode come from
// their parts): flips and rolls, diagonals, take, the split family, meshgrid, kron, block_diag,
// the scatters into slices, and the *_copy forms of views. Where PyTorch returns a view
// (diagonal), these return a copy.
#include <algorithm>
#include <numeric>
#include <optional>

#include "core/dispatcher.h"
#include "core/shape.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/elementwise_grad.h"
#include "ops/index_ops.h"
#include "ops/join.h"
#include "ops/op_helpers.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"

namespace ofl::internal {

using elementwise_grad::k;

namespace {

Shape shape_of(const Tensor& x) {
  return meta_of(x).shape;
}
int64_t rank(const Tensor& x) {
  return int64_t(shape_of(x).size());
}
int64_t size_at(const Tensor& x, int64_t d) {
  return shape_of(x)[size_t(d)];
}
Tensor wrap_int(int64_t v) {
  return wrap_scalar(double(v), DType::kInt64);
}
// An int64 arange on x's device.
Tensor range_like(const Tensor& x, int64_t start, int64_t end, int64_t step = 1) {
  return arange(double(start), double(end), double(step), DType::kInt64, meta_of(x).device);
}
// v of shape (n) viewed to broadcast at dimension d of an ndim-d tensor.
Tensor at_dim(const Tensor& v, int64_t d, int64_t ndim) {
  Shape s(size_t(ndim), 1);
  s[size_t(d)] = -1;
  return reshape(v, s);
}

Tensor flip(const Tensor& x, const std::vector<int64_t>& dims) {
  Tensor out = x;
  std::vector<bool> seen(size_t(std::max<int64_t>(rank(x), 1)), false);
  for (int64_t d : dims) {
    d = normalize_axis(d, rank(x), "flip");
    if (seen[size_t(d)]) fail("flip", "dim ", d, " appears multiple times in the list of dims");
    seen[size_t(d)] = true;
    const int64_t n = size_at(x, d);
    if (n > 1) out = index_select(out, d, range_like(x, n - 1, -1, -1));
  }
  return out.same(x) ? clone(x) : out;
}

Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims) {
  if (dims.empty()) {
    if (shifts.size() != 1) fail("roll", "without dims takes one shift, got ", shifts.size());
    return reshape(roll(flatten(x), shifts, {0}), shape_of(x));
  }
  if (shifts.size() != dims.size())
    fail("roll", "shifts and dims must have the same length, got ", shifts.size(), " and ",
         dims.size());
  Tensor out = x;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = normalize_axis(dims[i], rank(x), "roll"), n = size_at(x, d);
    const int64_t s = n == 0 ? 0 : ((shifts[i] % n) + n) % n;
    if (s) out = cat({narrow(out, d, n - s, s), narrow(out, d, 0, n - s)}, d);
  }
  return out.same(x) ? clone(x) : out;
}

Tensor rot90(const Tensor& x, int64_t k, const std::vector<int64_t>& dims) {
  if (dims.size() != 2) fail("rot90", "expects 2 dims, got ", dims.size());
  if (rank(x) < 2)
    fail("rot90", "expects an input of at least 2 dims, got ", shape_str(shape_of(x)));
  const int64_t d0 = normalize_axis(dims[0], rank(x), "rot90");
  const int64_t d1 = normalize_axis(dims[1], rank(x), "rot90");
  if (d0 == d1) fail("rot90", "the two dims must differ, got ", d0, " and ", d1);
  switch (((k % 4) + 4) % 4) {
    case 1:
      return transpose(flip(x, {d1}), d0, d1);
    case 2:
      return flip(x, {d0, d1});
    case 3:
      return transpose(flip(x, {d0}), d0, d1);
    default:
      return clone(x);
  }
}

// The diagonal at `offset` of dims d1, d2, as the last dimension (a copy).
Tensor diagonal(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  const int64_t n = rank(x);
  const int64_t d1 = normalize_axis(dim1, n, "diagonal"), d2 = normalize_axis(dim2, n, "diagonal");
  if (d1 == d2) fail("diagonal", "dim1 and dim2 cannot be identical, got ", d1, " and ", d2);
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < n; ++d)
    if (d != d1 && d != d2) perm.push_back(d);
  perm.push_back(d1);
  perm.push_back(d2);
  const int64_t rows = size_at(x, d1), cols = size_at(x, d2);
  const int64_t len = std::max<int64_t>(
      0, offset >= 0 ? std::min(rows, cols - offset) : std::min(rows + offset, cols));
  Shape flat = shape_of(x);
  flat.erase(flat.begin() + std::max(d1, d2));
  flat.erase(flat.begin() + std::min(d1, d2));
  flat.push_back(rows * cols);
  const Tensor xs = reshape(permute(x, perm), flat);
  if (len == 0) return narrow(xs, -1, 0, 0);
  const int64_t start = offset >= 0 ? offset : -offset * cols;
  return slice(xs, -1, start, start + (len - 1) * (cols + 1) + 1, cols + 1);
}

// v (..., n) on the diagonal at `offset` of a square (..., m, m) at dims dim1, dim2.
Tensor diag_embed(const Tensor& v, int64_t offset, int64_t dim1, int64_t dim2) {
  const int64_t n = size_at(v, rank(v) - 1), m = n + (offset < 0 ? -offset : offset);
  const int64_t out_rank = rank(v) + 1;
  const int64_t d1 = normalize_axis(dim1, out_rank, "diag_embed");
  const int64_t d2 = normalize_axis(dim2, out_rank, "diag_embed");
  if (d1 == d2) fail("diag_embed", "dim1 and dim2 cannot be identical, got ", d1, " and ", d2);
  Shape pad = shape_of(v);
  pad.back() = m - n;
  const Tensor padded = cat({v, zeros(pad, v.dtype(), meta_of(v).device)}, -1);
  const Tensor i = range_like(v, 0, m);
  const Tensor mask = eq(sub(unsqueeze(i, 0), unsqueeze(i, 1)), wrap_int(offset));  // j - i
  // Row i holds v[i] (offset >= 0) or column j holds v[j] (offset < 0).
  const Tensor values = unsqueeze(padded, offset >= 0 ? -1 : -2);
  Tensor out = where(mask, values, zeros({}, v.dtype(), meta_of(v).device));
  std::vector<int64_t> perm(static_cast<size_t>(out_rank));
  for (int64_t d = 0, batch = 0; d < out_rank; ++d)
    perm[size_t(d)] = d == d1 ? out_rank - 2 : (d == d2 ? out_rank - 1 : batch++);
  return permute(out, perm);
}

Tensor diag(const Tensor& x, int64_t offset) {
  if (rank(x) == 1) return diag_embed(x, offset, 0, 1);
  if (rank(x) == 2) return diagonal(x, offset, 0, 1);
  fail("diag", "expects a 1-d or 2-d input, got shape ", shape_str(shape_of(x)));
}

// Negative indices count from the end, as PyTorch's take.
Tensor take(const Tensor& x, const Tensor& index) {
  if (index.dtype() != DType::kInt64 && index.dtype() != DType::kInt32)
    fail<TypeError>("take", "index must be an integer tensor, got ", index.str());
  const int64_t n = meta_of(x).shape.empty() ? 1 : numel_of(shape_of(x));
  const Tensor flat = flatten(index);
  const Tensor wrapped = where(lt(flat, wrap_int(0)), add(flat, wrap_int(n)), flat);
  return reshape(index_select(reshape(x, {-1}), 0, wrapped), shape_of(index));
}

Tensor take_along_dim(const Tensor& x, const Tensor& idx, std::optional<int64_t> dim) {
  if (!dim) return take(reshape(x, {-1}), reshape(idx, {-1}));
  if (rank(x) != rank(idx))
    fail("take_along_dim", "input and indices should have the same number of dimensions, got ",
         shape_str(shape_of(x)), " and ", shape_str(shape_of(idx)));
  const int64_t d = normalize_axis(*dim, rank(x), "take_along_dim");
  Shape sx = shape_of(x), si = shape_of(idx);
  sx[size_t(d)] = si[size_t(d)] = 1;  // every dim but d broadcasts
  const Shape both = broadcast_shapes(sx, si, "take_along_dim");
  sx = both, si = both;
  sx[size_t(d)] = size_at(x, d);
  si[size_t(d)] = size_at(idx, d);
  // Negative indices count from the end (PyTorch's take_along_dim allows them).
  const Tensor size = wrap_scalar(double(size_at(x, d)), DType::kInt64);
  const Tensor wrapped = where(lt(idx, k(0)), add(idx, size), idx);
  return gather(expand(x, sx), d, expand(to_dtype(wrapped, DType::kInt64), si));
}

// Sizes of `sections` near-equal parts of n (the first n % sections one larger).
std::vector<int64_t> section_sizes(int64_t n, int64_t sections, const char* op) {
  if (sections <= 0) fail(op, "number of sections must be larger than 0, got ", sections);
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < sections; ++i) sizes.push_back(n / sections + (i < n % sections));
  return sizes;
}

std::vector<Tensor> split_at(const Tensor& x, const std::vector<int64_t>& indices, int64_t dim) {
  const int64_t n = size_at(x, dim);
  std::vector<Tensor> out;
  int64_t start = 0;
  for (size_t i = 0; i <= indices.size(); ++i) {
    int64_t stop = i < indices.size() ? indices[i] : n;
    stop = std::clamp(stop < 0 ? stop + n : stop, int64_t(0), n);
    const int64_t s = std::min(start, n);
    out.push_back(narrow(x, dim, s, std::max<int64_t>(0, stop - s)));
    start = std::max(start, stop);
  }
  return out;
}

std::vector<Tensor> tensor_split(const Tensor& x, int64_t sections, int64_t dim) {
  dim = normalize_axis(dim, rank(x), "tensor_split");
  return split_sizes(x, section_sizes(size_at(x, dim), sections, "tensor_split"), dim);
}

// hsplit, vsplit, dsplit: along `dim`, in equal parts that must divide it.
std::vector<Tensor> split_even(const Tensor& x, int64_t sections, int64_t dim, const char* op) {
  if (sections <= 0 || size_at(x, dim) % sections != 0)
    fail(op, "attempted to split along dimension ", dim, ", but the size of the dimension ",
         size_at(x, dim), " is not divisible by the split_size ", sections);
  return tensor_split(x, sections, dim);
}

int64_t split_dim(const Tensor& x, const char* op) {
  const std::string name = op;
  const int64_t need = name == "hsplit" ? 1 : (name == "vsplit" ? 2 : 3);
  if (rank(x) < need)
    fail(op, "requires a tensor with at least ", need, " dimension(s), got shape ",
         shape_str(shape_of(x)));
  return name == "hsplit" ? (rank(x) == 1 ? 0 : 1) : (name == "vsplit" ? 0 : 2);
}

std::vector<Tensor> meshgrid(std::vector<Tensor> ts, const std::optional<std::string>& indexing) {
  const std::string how = indexing.value_or("ij");
  if (how != "ij" && how != "xy")
    fail("meshgrid", "indexing must be 'ij' or 'xy', got '", how, "'");
  if (ts.empty()) fail("meshgrid", "expects a non-empty list of tensors");
  const bool swap = how == "xy" && ts.size() >= 2;
  if (swap) std::swap(ts[0], ts[1]);
  Shape full;
  for (const Tensor& t : ts) {
    if (rank(t) > 1)
      fail("meshgrid", "expects 0-d or 1-d tensors, got shape ", shape_str(shape_of(t)));
    full.push_back(rank(t) == 0 ? 1 : size_at(t, 0));
  }
  std::vector<Tensor> out;
  for (size_t i = 0; i < ts.size(); ++i)
    out.push_back(expand(at_dim(reshape(ts[i], {-1}), int64_t(i), int64_t(ts.size())), full));
  if (swap) std::swap(out[0], out[1]);
  return out;
}

std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& ts) {
  Shape s;
  for (const Tensor& t : ts) s = broadcast_shapes(s, shape_of(t), "broadcast_tensors");
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(expand(t, s));
  return out;
}

Tensor kron(const Tensor& a, const Tensor& b) {
  const int64_t n = std::max(rank(a), rank(b));
  Shape sa = shape_of(a), sb = shape_of(b);
  sa.insert(sa.begin(), size_t(n - rank(a)), 1);
  sb.insert(sb.begin(), size_t(n - rank(b)), 1);
  Shape ea, eb, out;
  for (size_t i = 0; i < size_t(n); ++i) {
    ea.insert(ea.end(), {sa[i], 1});
    eb.insert(eb.end(), {1, sb[i]});
    out.push_back(sa[i] * sb[i]);
  }
  return reshape(mul(reshape(a, ea), reshape(b, eb)), out);
}

Tensor block_diag(const std::vector<Tensor>& ts) {
  DType dt = ts.empty() ? DType::kFloat32 : ts[0].dtype();
  for (const Tensor& t : ts) dt = promote_types(dt, t.dtype());
  std::vector<Tensor> mats;
  int64_t cols = 0;
  for (const Tensor& t : ts) {
    if (rank(t) > 2)
      fail("block_diag", "input tensors must have 2 or fewer dimensions, got shape ",
           shape_str(shape_of(t)));
    mats.push_back(to_dtype(reshape(t, rank(t) == 2 ? shape_of(t) : Shape{1, -1}), dt));
    if (rank(t) == 0) mats.back() = reshape(mats.back(), {1, 1});
    cols += size_at(mats.back(), 1);
  }
  std::vector<Tensor> rows;
  int64_t before = 0;
  for (const Tensor& m : mats) {
    const int64_t r = size_at(m, 0), c = size_at(m, 1);
    const Device dev = meta_of(m).device;
    rows.push_back(
        cat({zeros({r, before}, dt, dev), m, zeros({r, cols - before - c}, dt, dev)}, 1));
    before += c;
  }
  if (rows.empty()) return zeros({0, 0}, dt);
  return cat(rows, 0);
}

Tensor cartesian_prod(const std::vector<Tensor>& ts) {
  if (ts.size() == 1) return ts[0];
  std::vector<Tensor> flat;
  for (const Tensor& g : meshgrid(ts, "ij")) flat.push_back(reshape(g, {-1}));
  return stack(flat, 1);
}

std::vector<Tensor> unravel_index(const Tensor& indices, const std::vector<int64_t>& shape) {
  if (is_floating(indices.dtype()) || indices.dtype() == DType::kBool)
    fail<TypeError>("unravel_index", "expects an integer tensor of indices, got ", indices.str());
  std::vector<Tensor> out(shape.size());
  Tensor rest = indices;
  for (size_t i = shape.size(); i-- > 0;) {
    out[i] = remainder(rest, wrap_int(shape[i]));
    rest = floor_divide(rest, wrap_int(shape[i]));
  }
  return out;
}

// input with src written into the slice start:stop:step of dim, by slice_backward's placement.
Tensor slice_scatter(const Tensor& x, const Tensor& src, int64_t dim, std::optional<int64_t> start,
                     std::optional<int64_t> stop, int64_t step) {
  dim = normalize_axis(dim, rank(x), "slice_scatter");
  const int64_t n = size_at(x, dim);
  auto clampi = [n](int64_t v) { return std::clamp(v < 0 ? v + n : v, int64_t(0), n); };
  const int64_t s = clampi(start.value_or(0)), e = std::max(s, clampi(stop.value_or(n)));
  const Shape want = shape_of(slice(x, dim, s, e, step));
  if (shape_of(src) != want)
    fail("slice_scatter", "src has shape ", shape_str(shape_of(src)), " but the slice of ",
         shape_str(shape_of(x)), " has shape ", shape_str(want));
  const Tensor placed = slice_backward(to_dtype(src, x.dtype()), shape_of(x), dim, s, e, step);
  const Tensor mask = ne(slice_backward(ones_like(src), shape_of(x), dim, s, e, step), k(0));
  return where(mask, placed, x);
}

Tensor index_fill(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& value) {
  dim = normalize_axis(dim, std::max<int64_t>(rank(x), 1), "index_fill");
  const int64_t n = rank(x) == 0 ? 1 : size_at(x, dim);
  Tensor idx = reshape(index, {1, -1});
  idx = where(lt(idx, wrap_int(0)), add(idx, wrap_int(n)), idx);
  const Tensor hit = any(eq(unsqueeze(range_like(x, 0, n), 1), idx), {1});
  Tensor v = to_dtype(value, x.dtype());
  if (rank(x) == 0) return where(reshape(hit, {}), v, x);
  return where(at_dim(hit, dim, rank(x)), v, x);
}

std::vector<int64_t> all_dims(const Tensor& x) {
  std::vector<int64_t> d(size_t(rank(x)));
  std::iota(d.begin(), d.end(), 0);
  return d;
}

OpDef composite(const char* name, std::vector<Api> api, const char* doc) {
  return {.name = name, .api = std::move(api), .doc = doc};
}

using V = std::vector<Tensor>;

OFL_REGISTER_OPS({
    composite("flip",
              {{"flip(Tensor input, int[] dims) -> Tensor", call_front<flip>()},
               {"fliplr(Tensor input) -> Tensor",
                [](const CallArgs& a) {
                  if (rank(a.tensor(0)) < 2) fail("fliplr", "input must be >= 2-d");
                  return flip(a.tensor(0), {1});
                }},
               {"flipud(Tensor input) -> Tensor",
                [](const CallArgs& a) {
                  if (rank(a.tensor(0)) < 1) fail("flipud", "input must be >= 1-d");
                  return flip(a.tensor(0), {0});
                }},
               {"rot90(Tensor input, int k=1, int[]? dims=None) -> Tensor",
                [](const CallArgs& a) {
                  return rot90(a.tensor(0), a.integer(1),
                               a.is_none(2) ? std::vector<int64_t>{0, 1} : a.ints(2));
                }}},
              "Reversed along dims (flip, fliplr, flipud) and rotated by 90 degrees (rot90)"),
    composite("roll",
              {{"roll(Tensor input, int[] shifts, int[]? dims=None) -> Tensor",
                call_front<roll>()}},
              "Elements shifted cyclically along dims (the flattened input without dims)"),
    composite("diag",
              {{"diag(Tensor input, int diagonal=0) -> Tensor", call_front<diag>()},
               {"diagonal(Tensor input, int offset=0, int dim1=0, int dim2=1) -> Tensor",
                call_front<diagonal>()},
               {"diag_embed(Tensor input, int offset=0, int dim1=-2, int dim2=-1) -> Tensor",
                call_front<diag_embed>()},
               {"diagflat(Tensor input, int offset=0) -> Tensor",
                [](const CallArgs& a) { return diag(reshape(a.tensor(0), {-1}), a.integer(1)); }},
               {"trace(Tensor input) -> Tensor",
                [](const CallArgs& a) {
                  if (rank(a.tensor(0)) != 2)
                    fail("trace", "expects a matrix, got shape ", shape_str(shape_of(a.tensor(0))));
                  return sum(diagonal(a.tensor(0), 0, 0, 1));
                }},
               {"diagonal_copy(Tensor input, int offset=0, int dim1=0, int dim2=1) -> Tensor",
                call_front<diagonal>(), kFunction}},
              "Diagonals: taken (diag of a matrix, diagonal: a copy, not a view), made (diag of a "
              "vector, diag_embed, diagflat) and summed (trace)"),
    composite("take",
              {{"take(Tensor input, Tensor index) -> Tensor", call_front<take>()},
               {"take_along_dim(Tensor input, Tensor indices, int? dim=None) -> Tensor",
                call_front<take_along_dim>()}},
              "Elements at indices of the flattened input (take) or along a dim (take_along_dim)"),
    composite(
        "tensor_split",
        {{"tensor_split(Tensor input, int sections, int dim=0) -> Tensor[]",
          call_front<tensor_split>()},
         {"tensor_split(Tensor input, int[] indices, int dim=0) -> Tensor[]",
          [](const CallArgs& a) {
            return split_at(a.tensor(0), a.ints(1),
                            normalize_axis(a.integer(2), rank(a.tensor(0)), "tensor_split"));
          }},
         {"tensor_split(Tensor input, Tensor tensor_indices_or_sections, int dim=0) -> Tensor[]",
          [](const CallArgs& a) {
            // A 0-d tensor is the number of sections, a 1-d one the indices (read on the host).
            const Tensor& t = a.tensor(1);
            if (is_floating(t.dtype()) || t.dim() > 1 || t.device().is_meta())
              fail<TypeError>("tensor_split",
                              "tensor_indices_or_sections must be a 0-d or 1-d "
                              "integer tensor with values (on CPU), got ",
                              t.str());
            const Tensor host = contiguous(to_device(to_dtype(t, DType::kInt64), Device{}));
            const int64_t* v = host.data<int64_t>();
            if (t.dim() == 0) return tensor_split(a.tensor(0), v[0], a.integer(2));
            return split_at(a.tensor(0), std::vector<int64_t>(v, v + host.numel()),
                            normalize_axis(a.integer(2), rank(a.tensor(0)), "tensor_split"));
          }},
         {"split_with_sizes(Tensor input, int[] split_sizes, int dim=0) -> Tensor[]",
          call_front<split_sizes>()},
         {"hsplit(Tensor input, int sections) -> Tensor[]",
          [](const CallArgs& a) {
            return split_even(a.tensor(0), a.integer(1), split_dim(a.tensor(0), "hsplit"),
                              "hsplit");
          }},
         {"hsplit(Tensor input, int[] indices) -> Tensor[]",
          [](const CallArgs& a) {
            return split_at(a.tensor(0), a.ints(1), split_dim(a.tensor(0), "hsplit"));
          }},
         {"vsplit(Tensor input, int sections) -> Tensor[]",
          [](const CallArgs& a) {
            return split_even(a.tensor(0), a.integer(1), split_dim(a.tensor(0), "vsplit"),
                              "vsplit");
          }},
         {"vsplit(Tensor input, int[] indices) -> Tensor[]",
          [](const CallArgs& a) {
            return split_at(a.tensor(0), a.ints(1), split_dim(a.tensor(0), "vsplit"));
          }},
         {"dsplit(Tensor input, int sections) -> Tensor[]",
          [](const CallArgs& a) {
            return split_even(a.tensor(0), a.integer(1), split_dim(a.tensor(0), "dsplit"),
                              "dsplit");
          }},
         {"dsplit(Tensor input, int[] indices) -> Tensor[]",
          [](const CallArgs& a) {
            return split_at(a.tensor(0), a.ints(1), split_dim(a.tensor(0), "dsplit"));
          }}},
        "Splits into sections or at indices (tensor_split, hsplit, vsplit, dsplit) and by sizes "
        "(split_with_sizes)"),
    composite("meshgrid",
              {{"meshgrid(Tensor[] tensors, *, str? indexing=None) -> Tensor[]",
                [](const CallArgs& a) {
                  return meshgrid(a.tensors(0), a.is_none(1)
                                                    ? std::nullopt
                                                    : std::optional<std::string>(a.str(1)));
                },
                kFunction},
               {"broadcast_tensors(Tensor[] tensors) -> Tensor[]", call_front<broadcast_tensors>(),
                kFunction},
               {"cartesian_prod(Tensor[] tensors) -> Tensor", call_front<cartesian_prod>(),
                kFunction},
               {"block_diag(Tensor[] tensors) -> Tensor", call_front<block_diag>(), kFunction},
               {"kron(Tensor input, Tensor other) -> Tensor", call_front<kron>()}},
              "Grids and products of tensors: meshgrid, broadcast_tensors, cartesian_prod, "
              "block_diag, kron"),
    composite("unravel_index",
              {{"unravel_index(Tensor indices, int[] shape) -> Tensor[]",
                call_front<unravel_index>(), kFunction}},
              "Flat indices as coordinates in shape"),
    composite(
        "slice_scatter",
        {{"slice_scatter(Tensor input, Tensor src, int dim=0, int? start=None, int? end=None, int "
          "step=1) -> Tensor",
          call_front<slice_scatter>()},
         {"select_scatter(Tensor input, Tensor src, int dim, int index) -> Tensor",
          [](const CallArgs& a) {
            const Tensor& x = a.tensor(0);
            const int64_t d = normalize_axis(a.integer(2), rank(x), "select_scatter");
            int64_t i = a.integer(3);
            if (i < -size_at(x, d) || i >= size_at(x, d))
              fail("select_scatter", "index ", i, " is out of range for dimension ", d, " of size ",
                   size_at(x, d));
            if (i < 0) i += size_at(x, d);
            return slice_scatter(x, unsqueeze(a.tensor(1), d), d, i, i + 1, 1);
          }},
         {"index_fill(Tensor input, int dim, Tensor index, Tensor|Number value) -> Tensor",
          call_front<index_fill>()}},
        "input with src written into a slice (slice_scatter) or an index (select_scatter) of a "
        "dim, or value at indices of a dim (index_fill)"),
    composite(
        "ravel",
        {{"ravel(Tensor input) -> Tensor",
          [](const CallArgs& a) { return reshape(a.tensor(0), {-1}); }},
         {"narrow_copy(Tensor input, int dim, int start, int length) -> Tensor",
          [](const CallArgs& a) {
            return clone(narrow(a.tensor(0), a.integer(1), a.integer(2), a.integer(3)));
          }},
         {"view_copy(Tensor input, int[] size) -> Tensor",
          [](const CallArgs& a) { return clone(view(a.tensor(0), a.ints(1))); }, kFunction},
         {"permute_copy(Tensor input, int[] dims) -> Tensor",
          [](const CallArgs& a) { return clone(permute(a.tensor(0), a.ints(1))); }, kFunction},
         {"transpose_copy(Tensor input, int dim0, int dim1) -> Tensor",
          [](const CallArgs& a) {
            return clone(transpose(a.tensor(0), a.integer(1), a.integer(2)));
          },
          kFunction},
         {"t_copy(Tensor input) -> Tensor",
          [](const CallArgs& a) {
            const Tensor& x = a.tensor(0);
            if (rank(x) > 2) fail("t_copy", "expects a tensor of <= 2 dims, got ", rank(x));
            return clone(rank(x) == 2 ? transpose(x, 0, 1) : x);
          },
          kFunction},
         {"unsqueeze_copy(Tensor input, int dim) -> Tensor",
          [](const CallArgs& a) { return clone(unsqueeze(a.tensor(0), a.integer(1))); }, kFunction},
         {"squeeze_copy(Tensor input, int[]? dim=None) -> Tensor",
          [](const CallArgs& a) {
            if (a.is_none(1)) return clone(squeeze(a.tensor(0)));
            return clone(squeeze(a.tensor(0), a.ints(1)));
          },
          kFunction},
         {"expand_copy(Tensor input, int[] size) -> Tensor",
          [](const CallArgs& a) { return clone(expand(a.tensor(0), a.ints(1))); }, kFunction},
         {"select_copy(Tensor input, int dim, int index) -> Tensor",
          [](const CallArgs& a) { return clone(select(a.tensor(0), a.integer(1), a.integer(2))); },
          kFunction},
         {"slice_copy(Tensor input, int dim=0, int? start=None, int? end=None, int step=1) -> "
          "Tensor",
          [](const CallArgs& a) {
            return clone(slice(a.tensor(0), a.integer(1), a.optional_integer(2),
                               a.optional_integer(3), a.integer(4)));
          },
          kFunction},
         {"detach_copy(Tensor input) -> Tensor",
          [](const CallArgs& a) { return clone(detach(a.tensor(0))); }, kFunction},
         {"alias_copy(Tensor input) -> Tensor", call_front<clone>(), kFunction}},
        "The flattened input (ravel) and the views' *_copy forms, which return new tensors"),
});

}  // namespace
}  // namespace ofl::internal
