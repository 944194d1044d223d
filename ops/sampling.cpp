// multinomial: the generator's seed and reserved Philox counters travel as attributes, so the
// op is a pure function of them (a row's samples do not depend on which rank draws them).
#include "ops/sampling.h"

#include "core/dispatcher.h"
#include "ops/elementwise.h"
#include "ops/elementwise_sbp.h"
#include "ops/kernels.h"
#include "ops/op_helpers.h"
#include "ops/shape_ops.h"

namespace ofl::internal {

using namespace elementwise_sbp;

namespace {

// Philox counters a row uses: one per sample with replacement, one per category without.
int64_t counters_per_row(const Attrs& attrs, const Shape& probs) {
  if (attrs.get<bool>("replacement")) return attrs.get<int64_t>("num_samples");
  return probs.empty() ? 0 : probs.back();
}

std::vector<TensorMeta> infer_multinomial(const InferArgs& a) {
  const TensorMeta& p = a.in[0];
  const int64_t num_samples = a.attrs.get<int64_t>("num_samples");
  if (p.shape.size() != 1 && p.shape.size() != 2)
    fail(a.op, "probabilities must be 1-d or 2-d, got shape ", shape_str(p.shape));
  if (!is_floating(p.dtype))
    fail<TypeError>(a.op, "probabilities must be floating point, got ", p.str());
  const int64_t n = p.shape.back();
  if (n == 0) fail(a.op, "probabilities of shape ", shape_str(p.shape), " have no category");
  if (num_samples <= 0) fail(a.op, "num_samples must be positive, got ", num_samples);
  if (!a.attrs.get<bool>("replacement") && num_samples > n)
    fail(a.op, "cannot draw ", num_samples, " samples without replacement from ", n,
         " categories (probabilities of shape ", shape_str(p.shape), ")");
  Shape out = p.shape;
  out.back() = num_samples;
  return single_output(std::move(out), DType::kInt64, p.device);
}

void compute_multinomial(const ComputeArgs& c) {
  static const OpDef& def = op_def("multinomial");
  require_output_shapes(def, c);
  const Tensor& p = c.in[0];
  multinomial_kernel().get(p.device().type)(
      contiguous(p), c.attrs.get<int64_t>("num_samples"), c.attrs.get<bool>("replacement"),
      static_cast<uint64_t>(c.attrs.get<int64_t>("seed")),
      static_cast<uint64_t>(c.attrs.get<int64_t>("offset")), c.out[0]);
}

// A shard of rows starting at r0 draws from the counters of those rows.
Attrs multinomial_shard(const Attrs& attrs, const ShardArgs& s) {
  Attrs out = attrs;
  const int64_t first_row = s.in_shapes[0].size() == 2 ? s.in_offsets[0].at(0) : 0;
  out.set("offset",
          attrs.get<int64_t>("offset") + first_row * counters_per_row(attrs, s.in_shapes[0]));
  return out;
}

}  // namespace

Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, Generator* gen) {
  static const OpDef& def = op_def("multinomial");
  Generator& g = gen ? *gen : default_generator();
  Attrs attrs{{"num_samples", num_samples},
              {"replacement", replacement},
              {"seed", static_cast<int64_t>(g.seed())},
              {"offset", int64_t{0}}};
  // Checks first, so a bad call reserves no counters.
  const std::vector<TensorMeta> out = infer_metas(def, {meta_of(probs)}, attrs);
  const Shape& shape = meta_of(probs).shape;
  const int64_t rows = shape.size() == 2 ? shape[0] : 1;
  if (!probs.device().is_meta())  // meta draws nothing and takes no counters
    attrs.set("offset", static_cast<int64_t>(g.advance(
                            static_cast<uint64_t>(rows * counters_per_row(attrs, shape)))));
  return dispatch1(def, {probs}, attrs);
}

namespace {

// multinomial (probs 1-d or 2-d): rows may be split (each shard draws its rows' counters).
Sigs multinomial_sbp(const SbpQuery& q) {
  if (rank_of(q.in[0]) != 2) return {};
  return {uniform(q, Sbp::split(0))};
}
const SbpRule kMultinomial{"multinomial", multinomial_sbp};

// sample_tokens (logits (B, V), seeds, steps, temperature, top_k, top_p: each (B,)) -> (B,)
// int64.
std::vector<TensorMeta> infer_sample_tokens(const InferArgs& a) {
  const TensorMeta& l = a.in[0];
  if (l.shape.size() != 2 || l.shape[1] < 1 || !is_floating(l.dtype))
    fail(a.op, "logits must be floating (batch, vocabulary), got ", l.str());
  const char* names[] = {"logits", "seeds", "steps", "temperature", "top_k", "top_p"};
  for (size_t i = 1; i < 6; ++i) {
    const TensorMeta& x = a.in[i];
    const bool want_float = i == 3 || i == 5;
    if (x.shape != Shape{l.shape[0]} || is_floating(x.dtype) != want_float ||
        x.dtype == DType::kBool)
      fail(a.op, names[i], " must be ", want_float ? "floating" : "integer", " of shape (",
           l.shape[0], ",), one per row of logits ", shape_str(l.shape), ", got ", x.str());
  }
  return single_output({l.shape[0]}, DType::kInt64, l.device);
}

void compute_sample_tokens(const ComputeArgs& c) {
  static const OpDef& def = op_def("sample_tokens");
  require_output_shapes(def, c);
  const auto as = [](const Tensor& t, DType dt) { return contiguous(to_dtype(t, dt)); };
  sample_tokens_kernel().get(c.in[0].device().type)(
      contiguous(c.in[0]), as(c.in[1], DType::kInt64), as(c.in[2], DType::kInt64),
      as(c.in[3], DType::kFloat64), as(c.in[4], DType::kInt64), as(c.in[5], DType::kFloat64),
      c.out[0]);
}

// Rows may be split: a row's token depends on its own inputs only.
Sigs sample_tokens_sbp(const SbpQuery& q) {
  return {uniform(q, Sbp::split(0))};
}
const SbpRule kSampleTokens{"sample_tokens", sample_tokens_sbp};

}  // namespace

Tensor sample_tokens(const Tensor& logits, const Tensor& seeds, const Tensor& steps,
                     const Tensor& temperature, const Tensor& top_k, const Tensor& top_p) {
  static const OpDef& def = op_def("sample_tokens");
  return dispatch1(def, {logits, seeds, steps, temperature, top_k, top_p}, {});
}

OFL_REGISTER_OPS({
    {.name = "sample_tokens",
     .num_inputs = 6,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &kSampleTokens,
     .infer = infer_sample_tokens,
     .compute = compute_sample_tokens,
     .api = {{"sample_tokens(Tensor logits, Tensor seeds, Tensor steps, Tensor temperature, "
              "Tensor top_k, Tensor top_p) -> Tensor",
              call_front<sample_tokens>()}}},
    {.name = "multinomial",
     .num_inputs = 1,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &kMultinomial,
     .attrs = {{"num_samples", AttrType::kInt},
               {"replacement", AttrType::kBool},
               {"seed", AttrType::kInt},
               {"offset", AttrType::kInt}},
     .infer = infer_multinomial,
     .compute = compute_multinomial,
     .shard_attrs = multinomial_shard,
     .api = {{"multinomial(Tensor input, int num_samples, bool replacement=False, *, "
              "Generator? generator=None) -> Tensor",
              call_front<multinomial>()}}},
});

}  // namespace ofl::internal
