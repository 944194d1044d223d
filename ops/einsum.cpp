// einsum: a composite of sum, permute, reshape and batched matmul (so global tensors take the
// SBP rules of those parts). Operands are contracted left to right; each pair becomes one
// matmul of [batch, rows, inner] by [batch, inner, cols].
#include <algorithm>
#include <map>

#include "core/dispatcher.h"
#include "ops/creation.h"
#include "ops/index_ops.h"
#include "ops/linalg.h"
#include "ops/op_helpers.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"

namespace ofl::internal {

namespace {

constexpr const char* kOp = "einsum";

// A tensor with one label per dimension (a subscript letter, or a dimension of the ellipsis).
struct Labeled {
  Tensor t;
  std::vector<int> labels;
};

// Labels: 'a'-'z' are 0-25, 'A'-'Z' 26-51, ellipsis dimensions 52 + k (k counted from the
// right, so that the operands' ellipses broadcast against each other).
int letter_label(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  fail(kOp, "invalid subscript '", std::string(1, c), "': subscripts are letters a-z and A-Z");
}
constexpr int kEllipsis = 52;

// One term's labels for an operand of ndim dimensions; `ellipsis_dims` grows to the widest.
std::vector<int> term_labels(const std::string& term, int64_t ndim, size_t operand,
                             int64_t& ellipsis_dims) {
  std::vector<int> labels;
  const size_t dots = term.find("...");
  const std::string head = term.substr(0, dots);
  const std::string tail = dots == std::string::npos ? "" : term.substr(dots + 3);
  if (tail.find('.') != std::string::npos || head.find('.') != std::string::npos)
    fail(kOp, "operand ", operand, "'s subscripts '", term, "' have a '.' outside an ellipsis");
  const int64_t named = static_cast<int64_t>(head.size() + tail.size());
  const int64_t spread = dots == std::string::npos ? 0 : ndim - named;
  if (named + spread != ndim || spread < 0)
    fail(kOp, "operand ", operand, " has ", ndim, " dimensions but subscripts '", term, "'");
  for (char c : head) labels.push_back(letter_label(c));
  for (int64_t k = spread - 1; k >= 0; --k) labels.push_back(kEllipsis + static_cast<int>(k));
  for (char c : tail) labels.push_back(letter_label(c));
  ellipsis_dims = std::max(ellipsis_dims, spread);
  return labels;
}

int64_t size_of(const Labeled& x, int label) {
  const Shape& s = meta_of(x.t).shape;
  for (size_t i = 0; i < x.labels.size(); ++i)
    if (x.labels[i] == label) return s[i];
  return 1;
}

bool has(const std::vector<int>& labels, int label) {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

// x with its dimensions ordered as `order` (every label of x, once).
Tensor arranged(const Labeled& x, const std::vector<int>& order) {
  std::vector<int64_t> dims;
  for (int l : order)
    dims.push_back(std::find(x.labels.begin(), x.labels.end(), l) - x.labels.begin());
  return permute(x.t, dims);
}

// Sums the labels of x that `keep` does not want.
Labeled sum_unwanted(Labeled x, const std::vector<int>& keep) {
  std::vector<int64_t> axes;
  std::vector<int> rest;
  for (size_t i = 0; i < x.labels.size(); ++i) {
    if (has(keep, x.labels[i]))
      rest.push_back(x.labels[i]);
    else
      axes.push_back(static_cast<int64_t>(i));
  }
  if (axes.empty()) return x;
  return {sum(x.t, axes, false), rest};
}

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

// a and b contracted over the labels they share that `keep` does not want, as one matmul.
Labeled contract(const Labeled& a, const Labeled& b, const std::vector<int>& keep) {
  std::vector<int> batch, rows, inner, cols;
  for (int l : a.labels) {
    if (!has(b.labels, l))
      rows.push_back(l);
    else if (has(keep, l))
      batch.push_back(l);
    else
      inner.push_back(l);
  }
  for (int l : b.labels)
    if (!has(a.labels, l)) cols.push_back(l);
  auto sizes = [](const Labeled& x, const std::vector<int>& ls, const Labeled* other) {
    std::vector<int64_t> out;
    for (int l : ls) {
      const int64_t n = size_of(x, l), m = other ? size_of(*other, l) : n;
      if (n != m && n != 1 && m != 1)
        fail(kOp, "subscript dimension sizes differ: ", n, " and ", m);
      out.push_back(std::max(n, m));
    }
    return out;
  };
  const std::vector<int64_t> bs = sizes(a, batch, &b), rs = sizes(a, rows, nullptr),
                             ks = sizes(a, inner, &b), cs = sizes(b, cols, nullptr);
  // Broadcast size-1 batch and inner dimensions (an ellipsis of 1) to the other's size.
  auto expanded = [&](const Labeled& x, const std::vector<int>& order, Shape shape) {
    Tensor t = arranged(x, order);
    return meta_of(t).shape == shape ? t : expand(t, shape);
  };
  std::vector<int> a_order = batch, b_order = batch;
  a_order.insert(a_order.end(), rows.begin(), rows.end());
  a_order.insert(a_order.end(), inner.begin(), inner.end());
  b_order.insert(b_order.end(), inner.begin(), inner.end());
  b_order.insert(b_order.end(), cols.begin(), cols.end());
  Shape a_shape = bs, b_shape = bs;
  a_shape.insert(a_shape.end(), rs.begin(), rs.end());
  a_shape.insert(a_shape.end(), ks.begin(), ks.end());
  b_shape.insert(b_shape.end(), ks.begin(), ks.end());
  b_shape.insert(b_shape.end(), cs.begin(), cs.end());
  const int64_t nb = product(bs), nr = product(rs), nk = product(ks), nc = product(cs);
  Tensor a3 = reshape(expanded(a, a_order, a_shape), {nb, nr, nk});
  Tensor b3 = reshape(expanded(b, b_order, b_shape), {nb, nk, nc});
  Shape out_shape = bs;
  out_shape.insert(out_shape.end(), rs.begin(), rs.end());
  out_shape.insert(out_shape.end(), cs.begin(), cs.end());
  std::vector<int> labels = batch;
  labels.insert(labels.end(), rows.begin(), rows.end());
  labels.insert(labels.end(), cols.begin(), cols.end());
  return {reshape(matmul(a3, b3), out_shape), labels};
}

}  // namespace

// A label repeated within one operand ('ii', 'iji') takes the diagonal of those dims: each pair
// becomes one dim, last, holding x[..., k, ..., k, ...].
Labeled diagonals(Labeled x, size_t operand) {
  for (bool again = true; again;) {
    again = false;
    for (size_t i = 0; i < x.labels.size() && !again; ++i)
      for (size_t j = i + 1; j < x.labels.size() && !again; ++j) {
        if (x.labels[i] != x.labels[j]) continue;
        const Shape shape = meta_of(x.t).shape;
        const int64_t n = shape[i];
        if (shape[j] != n)
          fail(kOp, "operand ", operand, " repeats a subscript over dims of sizes ", n, " and ",
               shape[j]);
        std::vector<int64_t> order;
        std::vector<int> labels;
        for (size_t d = 0; d < shape.size(); ++d)
          if (d != i && d != j) order.push_back(int64_t(d)), labels.push_back(x.labels[d]);
        Shape flat(shape.size() - 2);
        for (size_t d = 0; d < order.size(); ++d) flat[d] = shape[size_t(order[d])];
        flat.push_back(n * n);
        order.insert(order.end(), {int64_t(i), int64_t(j)});
        const Tensor steps = arange(0, double(n * n), double(n + 1), DType::kInt64, x.t.device());
        x.t = index_select(reshape(permute(x.t, order), flat), int64_t(flat.size()) - 1, steps);
        labels.push_back(x.labels[i]);
        x.labels = std::move(labels);
        again = true;
      }
  }
  return x;
}

Tensor einsum(const std::string& equation_in, const std::vector<Tensor>& operands) {
  std::string equation;
  for (char c : equation_in)
    if (c != ' ') equation += c;
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != operands.size())
    fail(kOp, "equation '", equation_in, "' names ", terms.size(), " operands, ", operands.size(),
         " given");
  std::vector<Labeled> xs;
  int64_t ellipsis_dims = 0;
  std::map<int, int> count;
  for (size_t i = 0; i < operands.size(); ++i) {
    const int64_t ndim = static_cast<int64_t>(meta_of(operands[i]).shape.size());
    xs.push_back({operands[i], term_labels(terms[i], ndim, i, ellipsis_dims)});
    for (int l : xs.back().labels) ++count[l];
    xs.back() = diagonals(std::move(xs.back()), i);  // after counting: 'ii' is not an output
  }
  std::vector<int> out;
  if (arrow == std::string::npos) {  // implicit: the ellipsis, then labels used once, sorted
    for (int64_t k = ellipsis_dims - 1; k >= 0; --k) out.push_back(kEllipsis + static_cast<int>(k));
    for (auto [l, n] : count)
      if (l < kEllipsis && n == 1) out.push_back(l);
  } else {
    const std::string rhs = equation.substr(arrow + 2);
    for (size_t i = 0; i < rhs.size(); ++i) {
      if (rhs.compare(i, 3, "...") == 0) {
        for (int64_t k = ellipsis_dims - 1; k >= 0; --k)
          out.push_back(kEllipsis + static_cast<int>(k));
        i += 2;
        continue;
      }
      const int l = letter_label(rhs[i]);
      if (!count.count(l))
        fail(kOp, "output subscript '", std::string(1, rhs[i]), "' of '", equation_in,
             "' appears in no operand");
      if (has(out, l))
        fail(kOp, "output subscript '", std::string(1, rhs[i]), "' of '", equation_in,
             "' appears twice");
      out.push_back(l);
    }
  }
  // Left to right: sum what no one else wants, then contract with the next operand.
  auto wanted_after = [&](size_t i) {
    std::vector<int> keep = out;
    for (size_t j = i; j < xs.size(); ++j)
      keep.insert(keep.end(), xs[j].labels.begin(), xs[j].labels.end());
    return keep;
  };
  Labeled acc = sum_unwanted(xs[0], wanted_after(1));
  for (size_t i = 1; i < xs.size(); ++i) {
    std::vector<int> keep = wanted_after(i + 1);
    Labeled next = sum_unwanted(xs[i], [&] {
      std::vector<int> k = keep;
      k.insert(k.end(), acc.labels.begin(), acc.labels.end());
      return k;
    }());
    acc = contract(acc, next, keep);
  }
  acc = sum_unwanted(acc, out);
  return arranged(acc, out);
}

OFL_REGISTER_OPS({
    {.name = "einsum",
     .num_inputs = -1,
     .api = {{"einsum(str equation, Tensor[] operands) -> Tensor", call_front<einsum>(),
              kFunction}},
     .doc = "Sums of products of the operands' elements, as Einstein's notation writes them"},
});

}  // namespace ofl::internal
