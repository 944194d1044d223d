#include "ops/sbp_rules.h"

#include <algorithm>

#include "ops/reduce.h"

namespace ofl::internal::sbp_rules {

namespace {

using Sigs = std::vector<SbpSignature>;
const Sbp kB = Sbp::broadcast();
const Sbp kPSum = Sbp::partial(PartialOp::kSum);
const Sbp kPMax = Sbp::partial(PartialOp::kMax);
const Sbp kPMin = Sbp::partial(PartialOp::kMin);

int64_t rank_of(const Shape& s) {
  return static_cast<int64_t>(s.size());
}

// Every input and output with the same Sbp.
SbpSignature uniform(const SbpQuery& q, const Sbp& s) {
  return {std::vector<Sbp>(q.in.size(), s), std::vector<Sbp>(q.out.size(), s)};
}

// One input at `i` with `s`, the others B, every output `out`.
SbpSignature one_input(const SbpQuery& q, size_t i, const Sbp& s, const Sbp& out) {
  SbpSignature sig{std::vector<Sbp>(q.in.size(), kB), std::vector<Sbp>(q.out.size(), out)};
  sig.in[i] = s;
  return sig;
}

// Splits of output 0's axes through broadcasting inputs (aligned on the right).
Sigs broadcast_splits(const SbpQuery& q) {
  Sigs sigs;
  const Shape& out = q.out[0];
  for (int64_t d = 0; d < rank_of(out); ++d) {
    SbpSignature sig{{}, std::vector<Sbp>(q.out.size(), Sbp::split(d))};
    bool any_split = false;
    for (const Shape& in : q.in) {
      int64_t di = d - (rank_of(out) - rank_of(in));
      bool split = di >= 0 && in[di] == out[d];
      sig.in.push_back(split ? Sbp::split(di) : kB);
      any_split |= split;
    }
    if (any_split) sigs.push_back(std::move(sig));
  }
  return sigs;
}

enum Partials : int {
  kNone = 0,
  kAllSum = 1,    // every input P(sum)
  kOneSum = 2,    // one input P(sum), the others B
  kFirstSum = 4,  // input 0 P(sum), the others B
  kAllMax = 8,
  kAllMin = 16,
  kSecondSum = 32,  // input 1 P(sum), the others B
};

template <int kPartials>
Sigs elementwise(const SbpQuery& q) {
  Sigs sigs = broadcast_splits(q);
  if (kPartials & kAllSum) sigs.push_back(uniform(q, kPSum));
  if (kPartials & kAllMax) sigs.push_back(uniform(q, kPMax));
  if (kPartials & kAllMin) sigs.push_back(uniform(q, kPMin));
  if (kPartials & kOneSum)
    for (size_t i = 0; i < q.in.size(); ++i) sigs.push_back(one_input(q, i, kPSum, kPSum));
  if ((kPartials & kFirstSum) && q.in.size() > 1) sigs.push_back(one_input(q, 0, kPSum, kPSum));
  if ((kPartials & kSecondSum) && q.in.size() > 1) sigs.push_back(one_input(q, 1, kPSum, kPSum));
  return sigs;
}

Sigs identity(const SbpQuery& q) {
  Sigs sigs = broadcast_splits(q);
  for (const Sbp& p : {kPSum, kPMax, kPMin}) sigs.push_back(uniform(q, p));
  return sigs;
}

Sigs cast(const SbpQuery& q) {
  Sigs sigs = elementwise<kAllMax | kAllMin>(q);
  if (is_floating(q.typed->get<DType>("dtype"))) sigs.push_back(uniform(q, kPSum));
  return sigs;
}

// The output ignores the input's values: splits map, and partial inputs give a B output.
Sigs fill_like(const SbpQuery& q) {
  Sigs sigs = broadcast_splits(q);
  for (const Sbp& p : {kPSum, kPMax, kPMin}) sigs.push_back({{p}, {kB}});
  return sigs;
}

Sigs random_fill(const SbpQuery& q) {
  return broadcast_splits(q);
}

Sigs fill(const SbpQuery& q) {
  Sigs sigs = broadcast_splits(q);
  if (!q.typed->has("value") || q.typed->get<double>("value") == 0.0)
    for (const Sbp& p : {kPSum, kPMax, kPMin}) sigs.push_back(uniform(q, p));
  return sigs;
}

// What a split of a reduced axis gives: a partial of the reduction, or nothing exact.
enum class ReduceKind { kSum, kMax, kMin, kExact };

// The axes a reduction reduces: typed attribute `axes` (empty: all) or `axis`.
std::vector<int64_t> reduced_axes(const SbpQuery& q) {
  const int64_t ndim = rank_of(q.in[0]);
  if (q.typed->has("axis")) {
    if (ndim == 0) return {};
    return {q.typed->axis("axis", ndim, "reduce")};
  }
  return reduction_axes(q.typed->get<std::vector<int64_t>>("axes"), ndim, "reduce");
}

template <ReduceKind kKind>
Sigs reduce(const SbpQuery& q) {
  const bool keepdim = q.typed->get<bool>("keepdim");
  const std::vector<int64_t> axes = reduced_axes(q);
  const Shape& in = q.in[0];
  const Sbp partial = kKind == ReduceKind::kSum ? kPSum : kKind == ReduceKind::kMax ? kPMax : kPMin;
  Sigs sigs;
  int64_t out_axis = 0;
  for (int64_t d = 0; d < rank_of(in); ++d) {
    bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!reduced) {
      sigs.push_back({{Sbp::split(d)}, std::vector<Sbp>(q.out.size(), Sbp::split(out_axis))});
    } else if (kKind == ReduceKind::kSum) {
      sigs.push_back({{Sbp::split(d)}, {partial}});
    } else if (kKind != ReduceKind::kExact && in[d] >= q.parallel_num) {
      sigs.push_back({{Sbp::split(d)}, {partial}});  // max/min need every shard non-empty
    }
    if (!reduced || keepdim) ++out_axis;
  }
  if (kKind != ReduceKind::kExact) sigs.push_back({{partial}, {partial}});
  return sigs;
}

Sigs matmul(const SbpQuery& q) {
  const Shape &a = q.in[0], &b = q.in[1], &out = q.out[0];
  const int64_t na = rank_of(a), nb = rank_of(b), no = rank_of(out);
  const int64_t batch = no - (na >= 2 ? 1 : 0) - (nb >= 2 ? 1 : 0);
  Sigs sigs;
  for (int64_t j = 0; j < batch; ++j) {  // batch axes, broadcast like elementwise
    SbpSignature sig{{kB, kB}, {Sbp::split(j)}};
    bool any_split = false;
    const Shape* ops[2] = {&a, &b};
    for (int k = 0; k < 2; ++k) {
      int64_t nbatch = rank_of(*ops[k]) - 2;
      int64_t dk = j - (batch - nbatch);
      if (nbatch > 0 && dk >= 0 && (*ops[k])[dk] == out[j]) {
        sig.in[k] = Sbp::split(dk);
        any_split = true;
      }
    }
    if (any_split) sigs.push_back(std::move(sig));
  }
  if (na >= 2) sigs.push_back({{Sbp::split(na - 2), kB}, {Sbp::split(batch)}});
  if (nb >= 2) sigs.push_back({{kB, Sbp::split(nb - 1)}, {Sbp::split(no - 1)}});
  sigs.push_back({{Sbp::split(na - 1), Sbp::split(nb >= 2 ? nb - 2 : 0)}, {kPSum}});
  sigs.push_back({{kPSum, kB}, {kPSum}});
  sigs.push_back({{kB, kPSum}, {kPSum}});
  return sigs;
}

// a (..., n, k), b (..., k, m) -> sum over the batch (n, m): a split batch or k gives partial
// sums; n and m split as in matmul.
Sigs matmul_sum(const SbpQuery& q) {
  const int64_t nd = rank_of(q.in[0]);
  Sigs sigs;
  for (int64_t j = 0; j < nd - 2; ++j) sigs.push_back({{Sbp::split(j), Sbp::split(j)}, {kPSum}});
  sigs.push_back({{Sbp::split(nd - 1), Sbp::split(nd - 2)}, {kPSum}});
  sigs.push_back({{Sbp::split(nd - 2), kB}, {Sbp::split(0)}});
  sigs.push_back({{kB, Sbp::split(nd - 1)}, {Sbp::split(1)}});
  sigs.push_back({{kPSum, kB}, {kPSum}});
  sigs.push_back({{kB, kPSum}, {kPSum}});
  return sigs;
}

Sigs permute(const SbpQuery& q) {
  Sigs sigs;
  const std::vector<int64_t>& dims = q.typed->get<std::vector<int64_t>>("dims");
  const int64_t n = rank_of(q.in[0]);
  for (int64_t i = 0; i < n; ++i)
    sigs.push_back({{Sbp::split(dims[i] < 0 ? dims[i] + n : dims[i])}, {Sbp::split(i)}});
  for (const Sbp& p : {kPSum, kPMax, kPMin}) sigs.push_back({{p}, {p}});
  return sigs;
}

Sigs reshape(const SbpQuery& q) {
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

Sigs expand(const SbpQuery& q) {
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

// Splits of every other axis (renumbered past a removed one) and partials pass through.
Sigs slice_axis(const SbpQuery& q, bool removed) {
  const int64_t axis = q.typed->axis("dim", rank_of(q.in[0]), "slice");
  Sigs sigs;
  for (int64_t d = 0; d < rank_of(q.in[0]); ++d)
    if (d != axis) sigs.push_back({{Sbp::split(d)}, {Sbp::split(removed && d > axis ? d - 1 : d)}});
  for (const Sbp& p : {kPSum, kPMax, kPMin}) sigs.push_back({{p}, {p}});
  return sigs;
}

Sigs slice(const SbpQuery& q) {
  return slice_axis(q, false);
}
Sigs select(const SbpQuery& q) {
  return slice_axis(q, true);
}

// The typed attribute `axis` of input 0, normalized (-1 when input 0 is 0-d).
int64_t typed_axis(const SbpQuery& q) {
  const int64_t nd = rank_of(q.in[0]);
  return nd == 0 ? -1 : q.typed->axis("axis", nd, "softmax");
}

Sigs softmax(const SbpQuery& q) {
  Sigs sigs;
  const int64_t axis = typed_axis(q);
  for (int64_t d = 0; d < rank_of(q.in[0]); ++d)
    if (d != axis) sigs.push_back(uniform(q, Sbp::split(d)));
  return sigs;
}

// f(grad, y) linear in grad: also a P(sum) grad with a B output.
Sigs softmax_grad(const SbpQuery& q) {
  Sigs sigs = softmax(q);
  sigs.push_back(one_input(q, 0, kPSum, kPSum));
  return sigs;
}

Sigs attention(const SbpQuery& q) {
  Sigs sigs{uniform(q, Sbp::split(0)), uniform(q, Sbp::split(1))};
  const Sbp rows = Sbp::split(2);
  if (!q.typed->get<bool>("causal")) sigs.push_back({{rows, kB, kB}, {rows, rows}});
  return sigs;
}

// Linear in grad (the row sums g.out too).
Sigs attention_grad(const SbpQuery& q) {
  Sigs sigs{uniform(q, Sbp::split(0)), uniform(q, Sbp::split(1)), one_input(q, 0, kPSum, kPSum)};
  const Sbp rows = Sbp::split(2);
  if (!q.typed->get<bool>("causal"))
    sigs.push_back({{rows, rows, kB, kB, rows, rows}, {rows, kPSum, kPSum}});
  return sigs;
}

// Axes of input 0 before the normalized ones (typed attribute normalized_shape).
int64_t norm_lead(const SbpQuery& q) {
  return rank_of(q.in[0]) - rank_of(q.typed->get<std::vector<int64_t>>("normalized_shape"));
}

Sigs norm(const SbpQuery& q) {
  Sigs sigs;
  for (int64_t d = 0; d < norm_lead(q); ++d) {
    SbpSignature sig{std::vector<Sbp>(q.in.size(), kB),
                     std::vector<Sbp>(q.out.size(), Sbp::split(d))};
    sig.in[0] = Sbp::split(d);
    sigs.push_back(std::move(sig));
  }
  return sigs;
}

// (grad, x, weight, [mean,] rstd) -> (gx, gweight[, gbias]): the rows split with the grad, the
// parameter gradients summed over rows are partial; all of it is linear in grad.
Sigs norm_grad(const SbpQuery& q) {
  Sigs sigs;
  for (int64_t d = 0; d < norm_lead(q); ++d) {
    SbpSignature sig{std::vector<Sbp>(q.in.size(), Sbp::split(d)),
                     std::vector<Sbp>(q.out.size(), kPSum)};
    sig.in[2] = kB;
    sig.out[0] = Sbp::split(d);
    sigs.push_back(std::move(sig));
  }
  sigs.push_back(one_input(q, 0, kPSum, kPSum));
  return sigs;
}

// The values do not depend on the layout (counters by logical index): splits map to both
// outputs, and a P(sum) x is scaled by the whole mask (B).
Sigs dropout(const SbpQuery& q) {
  Sigs sigs;
  for (int64_t d = 0; d < rank_of(q.in[0]); ++d)
    sigs.push_back({{Sbp::split(d)}, {Sbp::split(d), Sbp::split(d)}});
  sigs.push_back({{kPSum}, {kPSum, kB}});
  return sigs;
}

// x (N, C, d...) or (C), target and the losses (N, d...): every axis but the classes, and a
// P(sum) x (the losses are linear in it). Its backward maps the same axes the other way.
Sigs nll_splits(const SbpQuery& q, const Shape& x, bool backward) {
  Sigs sigs;
  for (int64_t d = 0; d < rank_of(x); ++d) {
    if (d == 1 || rank_of(x) < 2) continue;
    const int64_t t = d == 0 ? 0 : d - 1;
    sigs.push_back(backward ? SbpSignature{{Sbp::split(t), Sbp::split(t)}, {Sbp::split(d)}}
                            : SbpSignature{{Sbp::split(d), Sbp::split(t)}, {Sbp::split(t)}});
  }
  sigs.push_back(one_input(q, 0, kPSum, kPSum));
  return sigs;
}
Sigs nll_loss(const SbpQuery& q) {
  return nll_splits(q, q.in[0], false);
}
Sigs nll_loss_grad(const SbpQuery& q) {
  return nll_splits(q, q.out[0], true);
}

Sigs cat(const SbpQuery& q) {
  Sigs sigs;
  const int64_t axis = q.typed->axis("dim", rank_of(q.out[0]), "index");
  for (int64_t d = 0; d < rank_of(q.out[0]); ++d)
    if (d != axis) sigs.push_back(uniform(q, Sbp::split(d)));
  sigs.push_back(uniform(q, kPSum));
  return sigs;
}

Sigs gather(const SbpQuery& q) {
  Sigs sigs;
  const Shape &x = q.in[0], &index = q.in[1];
  const int64_t axis = q.typed->axis("dim", rank_of(x), "index");
  for (int64_t d = 0; d < rank_of(index); ++d)
    if (d != axis && x[d] == index[d]) sigs.push_back(uniform(q, Sbp::split(d)));
  return sigs;
}

Sigs index_select(const SbpQuery& q) {
  Sigs sigs;
  const int64_t axis = q.typed->axis("dim", rank_of(q.in[0]), "index");
  for (int64_t d = 0; d < rank_of(q.in[0]); ++d)
    if (d != axis) sigs.push_back({{Sbp::split(d), kB}, {Sbp::split(d)}});
  if (rank_of(q.in[1]) == 1) sigs.push_back({{kB, Sbp::split(0)}, {Sbp::split(axis)}});
  sigs.push_back({{kPSum, kB}, {kPSum}});
  return sigs;
}

Sigs embedding(const SbpQuery& q) {
  Sigs sigs;
  const int64_t ni = rank_of(q.in[1]);
  for (int64_t d = 0; d < ni; ++d) sigs.push_back({{kB, Sbp::split(d)}, {Sbp::split(d)}});
  sigs.push_back({{Sbp::split(1), kB}, {Sbp::split(ni)}});
  sigs.push_back({{Sbp::split(0), kB}, {kPSum}});  // vocabulary split: each part its own rows
  sigs.push_back({{kPSum, kB}, {kPSum}});
  return sigs;
}

Sigs scatter(const SbpQuery& q) {
  Sigs sigs;
  const Shape &x = q.in[0], &index = q.in[1], &src = q.in[2];
  const bool index_select_like = rank_of(index) == 1 && rank_of(x) > 1;  // index_add
  for (int64_t d = 0; d < rank_of(x); ++d) {
    if (d == q.typed->axis("dim", rank_of(x), "index") || src[d] != x[d]) continue;
    if (index_select_like)
      sigs.push_back({{Sbp::split(d), kB, Sbp::split(d)}, {Sbp::split(d)}});
    else if (index[d] == x[d])
      sigs.push_back(uniform(q, Sbp::split(d)));
  }
  sigs.push_back({{kPSum, kB, kPSum}, {kPSum}});
  return sigs;
}

// The additive scatters (scatter_add, index_add) also let each rank add its own part of index and
// source, split along `dim` (where the index's values, not positions, say where each goes), into
// a partial self; the parts sum to the whole.
Sigs scatter_add(const SbpQuery& q) {
  Sigs sigs = scatter(q);
  const Shape &x = q.in[0], &index = q.in[1], &src = q.in[2];
  const int64_t dim = q.typed->axis("dim", rank_of(x), "index");
  if (rank_of(index) == 1 && rank_of(x) > 1)  // index_add: index (n,), source's dim of n
    sigs.push_back({{kPSum, Sbp::split(0), Sbp::split(dim)}, {kPSum}});
  else if (dim < rank_of(index) && index[dim] == src[dim])
    sigs.push_back({{kPSum, Sbp::split(dim), Sbp::split(dim)}, {kPSum}});
  return sigs;
}

// Splits of every axis but the typed attribute dim, on every input and output.
Sigs along_dim(const SbpQuery& q) {
  Sigs sigs;
  const int64_t axis = q.typed->axis("dim", rank_of(q.in[0]), "index");
  for (int64_t d = 0; d < rank_of(q.in[0]); ++d)
    if (d != axis) sigs.push_back(uniform(q, Sbp::split(d)));
  return sigs;
}

Sigs cumsum(const SbpQuery& q) {
  Sigs sigs = along_dim(q);
  sigs.push_back(uniform(q, kPSum));
  return sigs;
}

Sigs masked_scatter(const SbpQuery& q) {
  return {{{kPSum, kB, kPSum}, {kPSum}}};
}

Sigs multinomial(const SbpQuery& q) {
  if (rank_of(q.in[0]) != 2) return {};
  return {uniform(q, Sbp::split(0))};
}

bool ungrouped(const SbpQuery& q) {
  return q.typed->get<int64_t>("groups") == 1;
}

// x (N, C, H, W) or (C, H, W), w (O, C / groups, kH, kW), b (O) -> (N, O, H', W'). Spatial
// splits would need halos, so none; a channel split must not cut through a group.
Sigs conv(const SbpQuery& q) {
  Sigs sigs;
  const int64_t channel = rank_of(q.in[0]) - 3;
  if (channel == 1) sigs.push_back({{Sbp::split(0), kB, kB}, {Sbp::split(0)}});
  if (ungrouped(q)) {
    sigs.push_back({{kB, Sbp::split(0), Sbp::split(0)}, {Sbp::split(channel)}});
    sigs.push_back({{Sbp::split(channel), Sbp::split(1), kPSum}, {kPSum}});
  }
  sigs.push_back({{kPSum, kB, kPSum}, {kPSum}});
  sigs.push_back({{kB, kPSum, kPSum}, {kPSum}});
  return sigs;
}

// gy (N, O, H', W'), w (O, C / groups, kH, kW) -> gx (N, C, H, W): the adjoint of conv in x.
Sigs conv_input_grad(const SbpQuery& q) {
  Sigs sigs;
  const int64_t channel = rank_of(q.in[0]) - 3;
  if (channel == 1) sigs.push_back({{Sbp::split(0), kB}, {Sbp::split(0)}});
  if (ungrouped(q)) {
    sigs.push_back({{kB, Sbp::split(1)}, {Sbp::split(channel)}});
    sigs.push_back({{Sbp::split(channel), Sbp::split(0)}, {kPSum}});
  }
  sigs.push_back({{kPSum, kB}, {kPSum}});
  sigs.push_back({{kB, kPSum}, {kPSum}});
  return sigs;
}

// gy (N, O, H', W'), x (N, C, H, W) -> gw (O, C / groups, kH, kW): a sum over the batch.
Sigs conv_weight_grad(const SbpQuery& q) {
  Sigs sigs;
  const int64_t channel = rank_of(q.in[0]) - 3;
  if (channel == 1) sigs.push_back({{Sbp::split(0), Sbp::split(0)}, {kPSum}});
  if (ungrouped(q)) {
    sigs.push_back({{Sbp::split(channel), kB}, {Sbp::split(0)}});
    sigs.push_back({{kB, Sbp::split(channel)}, {Sbp::split(1)}});
  }
  sigs.push_back({{kPSum, kB}, {kPSum}});
  sigs.push_back({{kB, kPSum}, {kPSum}});
  return sigs;
}

// Batch and channel splits of every input and output; the window's axes stay whole.
Sigs pool_splits(const SbpQuery& q) {
  Sigs sigs;
  for (int64_t d = 0; d < rank_of(q.in[0]) - 2; ++d) sigs.push_back(uniform(q, Sbp::split(d)));
  return sigs;
}

template <PartialOp kOp>
Sigs pool(const SbpQuery& q) {
  Sigs sigs = pool_splits(q);
  sigs.push_back(uniform(q, Sbp::partial(kOp)));
  return sigs;
}

// Linear in the gradient (input 0); max_pool2d_backward's indices (input 1) stay whole.
Sigs pool_backward(const SbpQuery& q) {
  Sigs sigs = pool_splits(q);
  sigs.push_back(one_input(q, 0, kPSum, kPSum));
  return sigs;
}

}  // namespace

const SbpRule kIdentity{"identity", identity};
const SbpRule kElementwise{"elementwise", elementwise<kNone>};
const SbpRule kLinearUnary{"linear_unary", elementwise<kAllSum>};
const SbpRule kMonotoneUnary{"monotone_unary", elementwise<kAllMax | kAllMin>};
const SbpRule kAddLike{"add_like", elementwise<kAllSum>};
const SbpRule kMulLike{"mul_like", elementwise<kOneSum>};
const SbpRule kDivLike{"div_like", elementwise<kFirstSum>};
const SbpRule kActivationGrad{"activation_grad", elementwise<kSecondSum>};
const SbpRule kMaximum{"maximum", elementwise<kAllMax>};
const SbpRule kMinimum{"minimum", elementwise<kAllMin>};
const SbpRule kCast{"cast", cast};
const SbpRule kCopy{"copy", identity};
const SbpRule kFill{"fill", fill};
const SbpRule kFillLike{"fill_like", fill_like};
const SbpRule kReduceSum{"reduce_sum", reduce<ReduceKind::kSum>};
const SbpRule kReduceMax{"reduce_max", reduce<ReduceKind::kMax>};
const SbpRule kReduceMin{"reduce_min", reduce<ReduceKind::kMin>};
const SbpRule kReduceExact{"reduce_exact", reduce<ReduceKind::kExact>};
const SbpRule kMatmul{"matmul", matmul};
const SbpRule kMatmulSum{"matmul_sum", matmul_sum};
const SbpRule kPermute{"permute", permute};
const SbpRule kReshape{"reshape", reshape};
const SbpRule kExpand{"expand", expand};
const SbpRule kSlice{"slice", slice};
const SbpRule kSelect{"select", select};
const SbpRule kSoftmax{"softmax", softmax};
const SbpRule kSoftmaxGrad{"softmax_grad", softmax_grad};
const SbpRule kNorm{"norm", norm};
const SbpRule kNormGrad{"norm_grad", norm_grad};
const SbpRule kAttention{"attention", attention};
const SbpRule kAttentionGrad{"attention_grad", attention_grad};
const SbpRule kDropout{"dropout", dropout};
const SbpRule kRandomFill{"random_fill", random_fill};
const SbpRule kNllLoss{"nll_loss", nll_loss};
const SbpRule kNllLossGrad{"nll_loss_grad", nll_loss_grad};
const SbpRule kCat{"cat", cat};
const SbpRule kGather{"gather", gather};
const SbpRule kIndexSelect{"index_select", index_select};
const SbpRule kEmbedding{"embedding", embedding};
const SbpRule kScatter{"scatter", scatter};
const SbpRule kScatterAdd{"scatter_add", scatter_add};
const SbpRule kAlongDim{"along_dim", along_dim};
const SbpRule kCumsum{"cumsum", cumsum};
const SbpRule kTriangular{"triangular", identity};
const SbpRule kMaskedScatter{"masked_scatter", masked_scatter};
const SbpRule kMultinomial{"multinomial", multinomial};
const SbpRule kConv{"conv", conv};
const SbpRule kConvInputGrad{"conv_input_grad", conv_input_grad};
const SbpRule kConvWeightGrad{"conv_weight_grad", conv_weight_grad};
const SbpRule kMaxPool{"max_pool", pool<PartialOp::kMax>};
const SbpRule kAvgPool{"avg_pool", pool<PartialOp::kSum>};
const SbpRule kMaxPoolIndices{"max_pool_indices", pool_splits};
const SbpRule kPoolBackward{"pool_backward", pool_backward};

}  // namespace ofl::internal::sbp_rules
