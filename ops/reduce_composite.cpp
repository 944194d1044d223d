// Reductions, searches and products of torch.* written as other ops (so autograd, meta and
// graph mode come from their parts): nan-ignoring sums, statistics pairs, order statistics by
// sort, isclose, searchsorted by comparison counts, cross, diff, trapezoid, dist, the add*
// products and tensordot.
#include <cmath>
#include <optional>

#include "core/dispatcher.h"
#include "core/shape.h"
#include "ops/complex.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/elementwise_grad.h"
#include "ops/index_ops.h"
#include "ops/join.h"
#include "ops/linalg.h"
#include "ops/masked.h"
#include "ops/op_helpers.h"
#include "ops/reduce.h"
#include "ops/scan.h"
#include "ops/shape_ops.h"
#include "ops/sort.h"

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
Tensor isnan(const Tensor& x) {
  return ne(x, x);
}
Tensor floating(const Tensor& x) {
  return is_floating(x.dtype()) ? x : to_dtype(x, DType::kFloat32);
}

Tensor nansum(const Tensor& x, const Axes& dims, bool keepdim, std::optional<DType> dtype) {
  const Tensor clean = is_floating(x.dtype()) ? where(isnan(x), zeros_like(x), x) : x;
  return sum(clean, dims, keepdim, dtype);
}

Tensor nanmean(const Tensor& x, const Axes& dims, bool keepdim, std::optional<DType> dtype) {
  if (!is_floating(dtype.value_or(x.dtype())))
    fail<TypeError>("nanmean", "expects a floating input or dtype, got ", x.str());
  const Tensor xf = dtype ? to_dtype(x, *dtype) : x;
  const Tensor count = sum(logical_not(isnan(xf)), dims, keepdim, xf.dtype());
  return div(nansum(xf, dims, keepdim, std::nullopt), count);
}

std::vector<Tensor> aminmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  const Axes axes = dim ? Axes{*dim} : Axes{};
  return {amin(x, axes, keepdim), amax(x, axes, keepdim)};
}

// The k-th smallest (1-based) along dim and its index, by a stable sort.
std::vector<Tensor> kth(const Tensor& x, int64_t kk, int64_t dim, bool keepdim, const char* op) {
  const int64_t d = normalize_axis(dim, std::max<int64_t>(rank(x), 1), op);
  const Tensor xs = rank(x) == 0 ? reshape(x, {1}) : x;
  const int64_t n = size_at(xs, d);
  if (kk < 1 || kk > n)
    fail(op, "k (", kk, ") out of range for dimension ", d, " of size ", n, " of ",
         shape_str(shape_of(x)));
  auto [values, indices] = sort(xs, d, false, true);
  Tensor v = narrow(values, d, kk - 1, 1), i = narrow(indices, d, kk - 1, 1);
  if (rank(x) == 0) return {reshape(v, {}), reshape(i, {})};
  if (!keepdim) return {squeeze(v, Axes{d}), squeeze(i, Axes{d})};
  return {v, i};
}

// PyTorch's median: the lower of the two middle values.
std::vector<Tensor> median_dim(const Tensor& x, int64_t dim, bool keepdim) {
  const int64_t d = normalize_axis(dim, std::max<int64_t>(rank(x), 1), "median");
  const int64_t n = rank(x) == 0 ? 1 : size_at(x, d);
  if (n == 0) fail("median", "cannot take the median of an empty dimension ", d);
  return kth(x, (n - 1) / 2 + 1, d, keepdim, "median");
}

Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  Tensor close = eq(a, b);
  if (equal_nan) close = logical_or(close, logical_and(isnan(a), isnan(b)));
  const Tensor fa = floating(a), fb = floating(b);
  const Tensor err = abs(sub(fa, fb)), allowed = add(k(atol), mul(abs(fb), k(rtol)));
  const Tensor finite = eq(sub(err, err), k(0));
  return logical_or(close, logical_and(finite, le(err, allowed)));
}

// Indices into the sorted last dim of seq where values would be inserted: the count of
// elements below (left) or not above (right) each value.
Tensor searchsorted(Tensor seq, const Tensor& values, bool out_int32, bool right,
                    const std::optional<std::string>& side, const Tensor& sorter) {
  if (side) {
    if (*side != "left" && *side != "right")
      fail("searchsorted", "side must be 'left' or 'right', got '", *side, "'");
    if (right && *side == "left")
      fail("searchsorted",
           "side and right can't be set to opposites, got side of left while "
           "right was True");
    right = *side == "right";
  }
  if (sorter.defined()) seq = gather(seq, rank(seq) - 1, sorter);
  Tensor v = values, s = seq;
  if (rank(seq) > 1) {
    Shape lead = shape_of(seq), vlead = shape_of(values);
    lead.pop_back();
    if (vlead.empty() || Shape(vlead.begin(), vlead.end() - 1) != lead)
      fail("searchsorted", "boundaries ", shape_str(shape_of(seq)), " and input value ",
           shape_str(shape_of(values)), " must have the same leading dimensions");
    s = unsqueeze(seq, -2);
  }
  const Tensor below = right ? le(s, unsqueeze(v, -1)) : lt(s, unsqueeze(v, -1));
  return sum(below, {-1}, false, out_int32 ? DType::kInt32 : DType::kInt64);
}

Tensor isin(const Tensor& elements, const Tensor& test, bool invert) {
  const Tensor hit = any(eq(unsqueeze(elements, -1), reshape(test, {-1})), {-1});
  return invert ? logical_not(hit) : hit;
}

Tensor cross(const Tensor& a, const Tensor& b, std::optional<int64_t> dim) {
  const Shape s = broadcast_shapes(shape_of(a), shape_of(b), "cross");
  int64_t d = -1;
  if (dim) {
    d = normalize_axis(*dim, int64_t(s.size()), "cross");
  } else {
    for (size_t i = 0; i < s.size() && d < 0; ++i)
      if (s[i] == 3) d = int64_t(i);
    if (d < 0) fail("cross", "no dimension of size 3 in ", shape_str(s));
  }
  if (s[size_t(d)] != 3)
    fail("cross", "dimension ", d, " of ", shape_str(shape_of(a)), " and ", shape_str(shape_of(b)),
         " must have size 3");
  const Tensor x = expand(a, s), y = expand(b, s);
  auto at = [d](const Tensor& t, int64_t i) { return select(t, d, i); };
  auto part = [&](int64_t i, int64_t j) {
    return sub(mul(at(x, i), at(y, j)), mul(at(x, j), at(y, i)));
  };
  return stack({part(1, 2), part(2, 0), part(0, 1)}, d);
}

Tensor diff(const Tensor& x, int64_t n, int64_t dim, const Tensor& prepend, const Tensor& append) {
  if (rank(x) == 0) fail("diff", "expects input to be at least one-dimensional");
  if (n < 0) fail("diff", "order must be non-negative, got ", n);
  const int64_t d = normalize_axis(dim, rank(x), "diff");
  if (n == 0) return x;  // prepend and append are ignored (PyTorch's)
  Tensor t = x;
  if (prepend.defined() || append.defined()) {
    std::vector<Tensor> parts;
    if (prepend.defined()) parts.push_back(prepend);
    parts.push_back(x);
    if (append.defined()) parts.push_back(append);
    t = cat(parts, d);
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = size_at(t, d);
    if (len == 0) break;
    const Tensor hi = narrow(t, d, 1, len - 1), lo = narrow(t, d, 0, len - 1);
    t = t.dtype() == DType::kBool ? logical_xor(hi, lo) : sub(hi, lo);
  }
  return t;
}

// The trapezoids' areas along dim: spacing dx (a number) or the differences of x.
Tensor trapezoids(const Tensor& y, const Tensor& x, double dx, int64_t dim, const char* op) {
  const int64_t d = normalize_axis(dim, rank(y), op);
  const int64_t n = size_at(y, d);
  if (n == 0) return narrow(y, d, 0, 0);
  const Tensor mid = mul(add(narrow(y, d, 1, n - 1), narrow(y, d, 0, n - 1)), k(0.5));
  if (!x.defined()) return mul(mid, k(dx));
  Tensor dxs;
  if (rank(x) == 1) {
    if (size_at(x, 0) != n)
      fail(op, "x of shape ", shape_str(shape_of(x)), " does not match y's dimension ", d,
           " of size ", n);
    Shape s(size_t(rank(y)), 1);
    s[size_t(d)] = n - 1;
    dxs = reshape(diff(x, 1, 0, Tensor(), Tensor()), s);
  } else {
    dxs = diff(x, 1, d - rank(y) + rank(x), Tensor(), Tensor());
  }
  return mul(mid, dxs);
}

Tensor dist(const Tensor& a, const Tensor& b, double p) {
  const Tensor d = abs(sub(a, b));
  if (std::isinf(p)) return p > 0 ? amax(d) : amin(d);
  if (p == 0) return sum(ne(d, k(0)), {}, false, d.dtype());
  return pow(sum(pow(d, p)), 1.0 / p);
}

// beta * input + alpha * product, input ignored when beta is 0.
Tensor add_product(const Tensor& input, const Tensor& product, double beta, double alpha) {
  const Tensor scaled = alpha == 1 ? product : mul(product, k(alpha));
  if (beta == 0) return add(zeros_like(input), scaled);
  return add(beta == 1 ? input : mul(input, k(beta)), scaled);
}

Tensor tensordot(const Tensor& a, const Tensor& b, int64_t dims) {
  if (dims < 0 || dims > rank(a) || dims > rank(b))
    fail("tensordot", "dims (", dims, ") must be between 0 and the ranks of ",
         shape_str(shape_of(a)), " and ", shape_str(shape_of(b)));
  Shape sa = shape_of(a), sb = shape_of(b), out;
  int64_t m = 1, kk = 1, n = 1;
  for (int64_t i = 0; i < rank(a) - dims; ++i) m *= sa[size_t(i)], out.push_back(sa[size_t(i)]);
  for (int64_t i = 0; i < dims; ++i) {
    if (sa[size_t(rank(a) - dims + i)] != sb[size_t(i)])
      fail("tensordot", "contracted dimensions of ", shape_str(sa), " and ", shape_str(sb),
           " differ");
    kk *= sb[size_t(i)];
  }
  for (int64_t i = dims; i < rank(b); ++i) n *= sb[size_t(i)], out.push_back(sb[size_t(i)]);
  return reshape(matmul(reshape(a, {m, kk}), reshape(b, {kk, n})), out);
}

// torch.cov: rows are variables, columns observations, weighted by the integer frequency weights
// and the observation weights as numpy.cov and PyTorch weigh them.
Tensor cov(const Tensor& input, double correction, const Tensor& fweights, const Tensor& aweights) {
  if (rank(input) > 2)
    fail("cov", "expects a tensor of at most 2 dims, got ", shape_str(shape_of(input)));
  const Tensor x = floating(rank(input) < 2 ? reshape(input, {1, -1}) : input);
  const int64_t n = size_at(x, 1);
  auto weights = [&](const Tensor& w, const char* name) {
    if (rank(w) > 1 || (rank(w) == 1 ? size_at(w, 0) : 1) != n)
      fail("cov", name, " must be 0-d or 1-d with one weight per observation (", n, "), got ",
           shape_str(shape_of(w)));
    return to_dtype(w, x.dtype());
  };
  Tensor w;
  if (fweights.defined()) {
    if (is_floating(fweights.dtype())) fail<TypeError>("cov", "fweights must be integral");
    w = weights(fweights, "fweights");
  }
  if (aweights.defined()) {
    const Tensor aw = weights(aweights, "aweights");
    w = w.defined() ? mul(w, aw) : aw;
  }
  Tensor c;
  if (!w.defined()) {
    const Tensor centered = sub(x, mean(x, {1}, true));
    c = div(matmul(centered, transpose(centered, 0, 1)), k(std::max(0.0, double(n) - correction)));
  } else {
    const Tensor wsum = sum(w);
    const Tensor avg = div(sum(mul(x, w), {1}, true), wsum);
    Tensor norm = wsum;
    if (correction != 0) {
      const Tensor extra =
          aweights.defined() ? div(sum(mul(w, to_dtype(aweights, x.dtype()))), wsum) : k(1);
      norm = sub(wsum, mul(extra, k(correction)));
    }
    norm = clamp(norm, 0.0, std::nullopt);
    const Tensor centered = sub(x, avg);
    c = div(matmul(mul(centered, w), transpose(centered, 0, 1)), norm);
  }
  return size_at(x, 0) == 1 ? reshape(c, {}) : c;  // one variable: 0-d (PyTorch squeezes)
}

Tensor corrcoef(const Tensor& input) {
  const Tensor c = cov(input, 1, Tensor(), Tensor());
  if (rank(c) == 0) return div(c, c);
  const int64_t n = size_at(c, 0);
  const Tensor d = sqrt(sum(mul(c, eye(n, n, c.dtype(), meta_of(c).device)), {1}));
  return clamp(div(div(c, unsqueeze(d, 1)), unsqueeze(d, 0)), -1.0, 1.0);
}

Tensor angle(const Tensor& x) {
  const Tensor xf = floating(x);
  const Tensor phase = where(lt(xf, k(0)), full_like(xf, M_PI), zeros_like(xf));
  return where(isnan(xf), xf, phase);
}

OpDef composite(const char* name, std::vector<Api> api, const char* doc) {
  return {.name = name, .api = std::move(api), .doc = doc};
}

std::optional<std::string> opt_str(const CallArgs& a, size_t i) {
  return a.is_none(i) ? std::nullopt : std::optional<std::string>(a.str(i));
}

double correction_of(const CallArgs& a, size_t unbiased, size_t correction) {
  return a.optional_number(correction).value_or(a.flag(unbiased) ? 1.0 : 0.0);
}

OFL_REGISTER_OPS({
    composite(
        "nansum",
        {{"nansum(Tensor input, int[]? dim=None, bool keepdim=False, *, dtype? dtype=None) -> "
          "Tensor",
          call_front<nansum>()},
         {"nanmean(Tensor input, int[]? dim=None, bool keepdim=False, *, dtype? dtype=None) -> "
          "Tensor",
          call_front<nanmean>()},
         {"count_nonzero(Tensor input, int[]? dim=None) -> Tensor",
          [](const CallArgs& a) {
            return sum(ne(a.tensor(0), k(0)), a.optional_ints(1), false, DType::kInt64);
          }},
         {"aminmax(Tensor input, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor "
          "max)",
          call_front<aminmax>()},
         {"std_mean(Tensor input, int[]? dim=None, bool unbiased=True, bool keepdim=False, *, "
          "float? correction=None) -> Tensor[]",
          [](const CallArgs& a) {
            const Tensor& x = a.tensor(0);
            const Axes d = a.optional_ints(1);
            return std::vector<Tensor>{std(x, d, correction_of(a, 2, 4), a.flag(3)),
                                       mean(x, d, a.flag(3))};
          },
          kFunction},
         {"var_mean(Tensor input, int[]? dim=None, bool unbiased=True, bool keepdim=False, *, "
          "float? correction=None) -> Tensor[]",
          [](const CallArgs& a) {
            const Tensor& x = a.tensor(0);
            const Axes d = a.optional_ints(1);
            return std::vector<Tensor>{var(x, d, correction_of(a, 2, 4), a.flag(3)),
                                       mean(x, d, a.flag(3))};
          },
          kFunction},
         {"std_mean(Tensor input, bool unbiased) -> Tensor[]",
          [](const CallArgs& a) {
            const Tensor& x = a.tensor(0);
            return std::vector<Tensor>{std(x, {}, a.flag(1) ? 1.0 : 0.0, false),
                                       mean(x, {}, false)};
          },
          kFunction},
         {"var_mean(Tensor input, bool unbiased) -> Tensor[]",
          [](const CallArgs& a) {
            const Tensor& x = a.tensor(0);
            return std::vector<Tensor>{var(x, {}, a.flag(1) ? 1.0 : 0.0, false),
                                       mean(x, {}, false)};
          },
          kFunction}},
        "Sums and means ignoring NaN (nansum, nanmean), counts of nonzeros, the min and max "
        "(aminmax), and the std or var with the mean"),
    composite(
        "kthvalue",
        {{"kthvalue(Tensor input, int k, int dim=-1, bool keepdim=False) -> (Tensor values, "
          "Tensor indices)",
          [](const CallArgs& a) {
            return kth(a.tensor(0), a.integer(1), a.integer(2), a.flag(3), "kthvalue");
          }},
         {"median(Tensor input) -> Tensor",
          [](const CallArgs& a) {
            const Tensor flat = reshape(a.tensor(0), {-1});
            return median_dim(flat, 0, false)[0];
          }},
         {"median(Tensor input, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
          call_front<median_dim>()},
         {"msort(Tensor input) -> Tensor",
          [](const CallArgs& a) { return sort(a.tensor(0), 0, false, false).first; }}},
        "Order statistics by a sort: the k-th smallest (kthvalue), the lower median (median; "
        "NaN sorts last), the sort along dim 0 (msort)"),
    composite(
        "isclose",
        {{"isclose(Tensor input, Tensor other, float rtol=1e-05, float atol=1e-08, bool "
          "equal_nan=False) -> Tensor",
          call_front<isclose>()},
         {"equal(Tensor input, Tensor other) -> Tensor",
          [](const CallArgs& a) {
            if (shape_of(a.tensor(0)) != shape_of(a.tensor(1)))
              return full({}, 0, DType::kBool, meta_of(a.tensor(0)).device);
            return all(eq(a.tensor(0), a.tensor(1)));
          }},
         {"isin(Tensor|Number elements, Tensor|Number test_elements, *, bool assume_unique=False, "
          "bool invert=False) -> Tensor",
          [](const CallArgs& a) { return isin(a.tensor(0), a.tensor(1), a.flag(3)); }}},
        "Elementwise closeness (isclose), whole equality as a 0-d bool tensor (equal), and "
        "membership (isin)"),
    composite(
        "searchsorted",
        {{"searchsorted(Tensor sorted_sequence, Tensor|Number input, *, bool out_int32=False, "
          "bool right=False, str? side=None, Tensor? sorter=None) -> Tensor",
          [](const CallArgs& a) {
            return searchsorted(a.tensor(0), a.tensor(1), a.flag(2), a.flag(3), opt_str(a, 4),
                                a.optional_tensor(5));
          },
          kFunction},
         {"bucketize(Tensor|Number input, Tensor boundaries, *, bool out_int32=False, bool "
          "right=False) -> Tensor",
          [](const CallArgs& a) {
            if (rank(a.tensor(1)) != 1)
              fail("bucketize", "boundaries must be 1-d, got ", shape_str(shape_of(a.tensor(1))));
            return searchsorted(a.tensor(1), a.tensor(0), a.flag(2), a.flag(3), std::nullopt,
                                Tensor());
          }}},
        "Insertion indices into sorted boundaries, by counting comparisons (O(n m))"),
    composite(
        "cross",
        {{"cross(Tensor input, Tensor other, int? dim=None) -> Tensor", call_front<cross>()},
         {"diff(Tensor input, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) -> "
          "Tensor",
          call_front<diff>()},
         {"trapezoid(Tensor y, Tensor x, *, int dim=-1) -> Tensor",
          [](const CallArgs& a) {
            return sum(trapezoids(a.tensor(0), a.tensor(1), 1, a.integer(2), "trapezoid"),
                       {a.integer(2)});
          },
          kFunction},
         {"trapezoid(Tensor y, *, float dx=1, int dim=-1) -> Tensor",
          [](const CallArgs& a) {
            return sum(trapezoids(a.tensor(0), Tensor(), a.number(1), a.integer(2), "trapezoid"),
                       {a.integer(2)});
          },
          kFunction},
         {"trapz(Tensor y, Tensor x, *, int dim=-1) -> Tensor",
          [](const CallArgs& a) {
            return sum(trapezoids(a.tensor(0), a.tensor(1), 1, a.integer(2), "trapz"),
                       {a.integer(2)});
          },
          kFunction},
         {"trapz(Tensor y, *, float dx=1, int dim=-1) -> Tensor",
          [](const CallArgs& a) {
            return sum(trapezoids(a.tensor(0), Tensor(), a.number(1), a.integer(2), "trapz"),
                       {a.integer(2)});
          },
          kFunction},
         {"cumulative_trapezoid(Tensor y, Tensor x, *, int dim=-1) -> Tensor",
          [](const CallArgs& a) {
            return cumsum(
                trapezoids(a.tensor(0), a.tensor(1), 1, a.integer(2), "cumulative_trapezoid"),
                a.integer(2));
          },
          kFunction},
         {"cumulative_trapezoid(Tensor y, *, float dx=1, int dim=-1) -> Tensor",
          [](const CallArgs& a) {
            return cumsum(trapezoids(a.tensor(0), Tensor(), a.number(1), a.integer(2),
                                     "cumulative_trapezoid"),
                          a.integer(2));
          },
          kFunction},
         {"dist(Tensor input, Tensor other, float p=2) -> Tensor", call_front<dist>()},
         {"angle(Tensor input) -> Tensor", call_front<angle>()}},
        "Vector calculus on samples: cross products, differences, the trapezoid rule, distances "
        "and the angle of real numbers"),
    composite(
        "addmv",
        {{"addmv(Tensor input, Tensor mat, Tensor vec, *, float beta=1, float alpha=1) -> Tensor",
          [](const CallArgs& a) {
            if (rank(a.tensor(1)) != 2 || rank(a.tensor(2)) != 1)
              fail("addmv", "expects a matrix and a vector, got ", shape_str(shape_of(a.tensor(1))),
                   " and ", shape_str(shape_of(a.tensor(2))));
            return add_product(a.tensor(0), matmul(a.tensor(1), a.tensor(2)), a.number(3),
                               a.number(4));
          }},
         {"addr(Tensor input, Tensor vec1, Tensor vec2, *, float beta=1, float alpha=1) -> Tensor",
          [](const CallArgs& a) {
            if (rank(a.tensor(1)) != 1 || rank(a.tensor(2)) != 1)
              fail("addr", "expects two vectors, got ", shape_str(shape_of(a.tensor(1))), " and ",
                   shape_str(shape_of(a.tensor(2))));
            const Tensor outer = mul(unsqueeze(a.tensor(1), 1), unsqueeze(a.tensor(2), 0));
            return add_product(a.tensor(0), outer, a.number(3), a.number(4));
          }},
         {"addbmm(Tensor input, Tensor batch1, Tensor batch2, *, float beta=1, float alpha=1) -> "
          "Tensor",
          [](const CallArgs& a) {
            if (rank(a.tensor(1)) != 3 || rank(a.tensor(2)) != 3)
              fail("addbmm", "expects 3-d batches, got ", shape_str(shape_of(a.tensor(1))), " and ",
                   shape_str(shape_of(a.tensor(2))));
            return add_product(a.tensor(0), sum(matmul(a.tensor(1), a.tensor(2)), {0}), a.number(3),
                               a.number(4));
          }},
         {"vdot(Tensor input, Tensor other) -> Tensor",
          [](const CallArgs& a) {
            if (rank(a.tensor(0)) != 1 || rank(a.tensor(1)) != 1)
              fail("vdot", "expects 1-d tensors, got ", shape_str(shape_of(a.tensor(0))), " and ",
                   shape_str(shape_of(a.tensor(1))));
            return sum(mul(a.tensor(0), a.tensor(1)));
          }},
         {"tensordot(Tensor a, Tensor b, int dims=2) -> Tensor", call_front<tensordot>(),
          kFunction},
         {"cov(Tensor input, *, int correction=1, Tensor? fweights=None, Tensor? aweights=None) "
          "-> Tensor",
          [](const CallArgs& a) {
            return cov(a.tensor(0), double(a.integer(1)), a.optional_tensor(2),
                       a.optional_tensor(3));
          }},
         {"corrcoef(Tensor input) -> Tensor", call_front<corrcoef>()}},
        "beta * input + alpha * a product (addmv, addr, addbmm), dot products (vdot, "
        "tensordot) and covariance (cov, corrcoef)"),
    composite(
        "fill",
        {{"fill(Tensor input, Tensor|Number value) -> Tensor",
          [](const CallArgs& a) {
            const Tensor &x = a.tensor(0), &v = a.tensor(1);
            if (v.dim() != 0) fail("fill", "value must be a number or a 0-d tensor, got ", v.str());
            if (!x.requires_grad() && !v.requires_grad()) return full_like(x, v.item<double>());
            // Under autograd, as a where: x's gradient is zero, value's the sum (PyTorch's).
            return where(full_like(x, 1, DType::kBool), to_dtype(v, x.dtype()), x);
          },
          kFunction},
         {"conj_physical(Tensor input) -> Tensor",
          [](const CallArgs& a) {
            const Tensor& x = a.tensor(0);
            return is_complex(x.dtype()) ? conj(x) : clone(x);
          }},
         {"resolve_conj(Tensor input) -> Tensor", [](const CallArgs& a) { return a.tensor(0); }},
         {"resolve_neg(Tensor input) -> Tensor", [](const CallArgs& a) { return a.tensor(0); }}},
        "A tensor like input filled with value (fill); conj_physical, resolve_conj and "
        "resolve_neg of real tensors"),
});

}  // namespace
}  // namespace ofl::internal
