// multinomial: the generator's seed and reserved Philox counters travel as attributes, so the
// op is a pure function of them (a row's samples do not depend on which rank draws them).
#include "ops/sampling.h"

#include "core/dispatcher.h"
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

}  // namespace

OFL_REGISTER_OPS({
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
              [](const CallArgs& a) {
                return multinomial(a.tensor(0), a.integer(1), a.flag(2), a.generator(3));
              }}}},
});

}  // namespace ofl::internal
