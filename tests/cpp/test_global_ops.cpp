// Ops on global tensors: ranks as threads with Gloo. Each result is compared with the same op on
// the whole logical tensor, and the chosen layouts and collectives are checked where the issue
// fixes them (S(0) x B matmul needs no communication, a data-parallel gradient is one
// all_reduce, ...).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "boxing/reshard.h"
#include "core/autograd/engine.h"
#include "global/global_op.h"
#include "gloo_test_util.h"
#include "ops/ops.h"
#include "sbp/global_info.h"

using namespace ofl::internal;
using comm::Communicator;
using comm::testing::run_ranks;
using ofl::internal::testing::error_of;

namespace {

// Values with a fixed seed: every rank builds the same logical tensor.
Tensor logical(const Shape& shape, int salt) {
  Tensor t = Tensor::empty(shape, DType::kFloat32);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = static_cast<float>(std::sin(0.7 * i + salt));
  return t;
}

struct Rank {
  std::shared_ptr<BoxingContext> ctx = std::make_shared<BoxingContext>();
  std::vector<std::string> log;
  int rank;
  explicit Rank(Communicator& c) : rank(c.rank()) {
    ctx->world = std::shared_ptr<Communicator>(&c, [](Communicator*) {});
    ctx->cache = std::make_shared<PlanCache>(ClusterSpec::cpu_loopback(c.size()));
    ctx->log = &log;
  }
  Tensor global(const Tensor& full, const Placement& p, const std::string& sbp) const {
    NdSbp nd = NdSbp::parse(sbp);
    return as_tensor({shard_of(full, p, nd, *p.coords_of(rank)), full.shape(), p, nd}, ctx);
  }
  Tensor full(const Tensor& g) const { return to_full(as_global(g, "test"), *ctx); }
};

std::string sbp_of(const Tensor& t) {
  return t.impl()->global->nd_sbp.str();
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  Tensor g = contiguous(to_dtype(got, DType::kFloat64)),
         w = contiguous(to_dtype(want, DType::kFloat64));
  for (int64_t i = 0; i < g.numel(); ++i)
    ASSERT_NEAR(g.data<double>()[i], w.data<double>()[i],
                1e-4 * (1 + std::abs(w.data<double>()[i])))
        << what << " at " << i;
}

Placement line(int n) {
  return Placement::all(DeviceType::kCPU, n);
}

}  // namespace

TEST(GlobalOps, SplitPlusBroadcastStaysSplitWithoutCommunication) {
  run_ranks(2, [](int, Communicator& c) {
    Rank r(c);
    Tensor a = logical({5, 3}, 1), b = logical({3}, 2);
    Tensor y = add(r.global(a, line(2), "S(0)"), r.global(b, line(2), "B"));
    EXPECT_EQ(sbp_of(y), "S(0)");
    EXPECT_TRUE(r.log.empty()) << r.log[0];
    expect_close(r.full(y), add(a, b), "add");
  });
}

TEST(GlobalOps, MatmulPicksTheSignatureTheInputsAlreadyHave) {
  run_ranks(2, [](int, Communicator& c) {
    Rank r(c);
    Tensor x = logical({6, 4}, 1), w = logical({4, 5}, 2);
    Tensor want = matmul(x, w);
    struct Case {
      const char *a, *b, *out;
    } cases[] = {{"S(0)", "B", "S(0)"}, {"B", "S(1)", "S(1)"}, {"S(1)", "S(0)", "P(sum)"}};
    for (const Case& k : cases) {
      r.log.clear();
      Tensor y = matmul(r.global(x, line(2), k.a), r.global(w, line(2), k.b));
      EXPECT_EQ(sbp_of(y), k.out) << k.a << " x " << k.b;
      EXPECT_TRUE(r.log.empty()) << k.a << " x " << k.b;
      expect_close(r.full(y), want, std::string(k.a) + " x " + k.b);
    }
  });
}

TEST(GlobalOps, SumOverASplitAxisIsPartialSum) {
  run_ranks(3, [](int, Communicator& c) {
    Rank r(c);
    Tensor x = logical({7, 4}, 3);
    Tensor y = sum(r.global(x, line(3), "S(0)"), {0});
    EXPECT_EQ(sbp_of(y), "P(sum)");
    expect_close(r.full(y), sum(x, {0}), "sum");
    Tensor m = amax(r.global(x, line(3), "S(1)"), {1});
    EXPECT_EQ(sbp_of(m), "P(max)");  // no gradient is needed, so max partials are allowed
    expect_close(r.full(m), amax(x, {1}), "amax");
  });
}

// Eager calls remember their signature by everything the choice reads (PlanCache::signature):
// calls that differ only in an attribute or an input's layout still choose their own.
TEST(GlobalOps, RememberedSignaturesFollowAttributesAndLayouts) {
  run_ranks(2, [](int, Communicator& c) {
    Rank r(c);
    Tensor x = logical({6, 4}, 5);
    Tensor split_rows = r.global(x, line(2), "S(0)");
    for (int round = 0; round < 2; ++round) {  // the second round's calls are remembered
      EXPECT_EQ(sbp_of(sum(split_rows, {0})), "P(sum)");
      EXPECT_EQ(sbp_of(sum(split_rows, {1})), "S(0)");
      EXPECT_EQ(sbp_of(sum(r.global(x, line(2), "S(1)"), {1})), "P(sum)");
      expect_close(r.full(sum(split_rows, {1})), sum(x, {1}), "sum over dim 1");
    }
  });
}

TEST(GlobalOps, ViewsMapSplitsThroughReshapeAndTranspose) {
  run_ranks(2, [](int, Communicator& c) {
    Rank r(c);
    Tensor x = logical({4, 3, 6}, 4);
    Tensor g = r.global(x, line(2), "S(0)");
    Tensor y = reshape(g, {12, 6});
    EXPECT_EQ(sbp_of(y), "S(0)");
    Tensor t = transpose(reshape(g, {4, 3, 2, 3}), 1, 2);
    EXPECT_EQ(sbp_of(t), "S(0)");
    EXPECT_TRUE(r.log.empty());
    expect_close(r.full(t), transpose(reshape(x, {4, 3, 2, 3}), 1, 2), "transpose");
    expect_close(r.full(softmax(g, -1)), softmax(x, -1), "softmax");
  });
}

TEST(GlobalOps, DataParallelGradientsAreOneFusedAllReduce) {
  run_ranks(2, [](int, Communicator& c) {
    Rank r(c);
    Tensor x = logical({6, 4}, 1), w = logical({4, 3}, 2), b = logical({3}, 3);
    Tensor gw = r.global(w, line(2), "B"), gb = r.global(b, line(2), "B");
    gw.set_requires_grad(true);
    gb.set_requires_grad(true);
    auto loss_of = [](const Tensor& x, const Tensor& w, const Tensor& b) {
      return sum(mul(add(matmul(x, w), b), wrap_scalar(0.5, DType::kFloat64)));
    };
    Tensor loss = loss_of(r.global(x, line(2), "S(0)"), gw, gb);
    r.log.clear();
    autograd::backward({loss}, {Tensor()}, false, false);
    ASSERT_TRUE(gw.grad().defined() && gb.grad().defined());
    EXPECT_EQ(sbp_of(gw.grad()), "B");
    EXPECT_EQ(sbp_of(gb.grad()), "B");
    // Both parameters' gradients in one buffer: (4*3 + 3) float32.
    ASSERT_EQ(r.log.size(), 1u);
    EXPECT_EQ(r.log[0], "all_reduce(sum) group[0,1] 60 B");

    Tensor lw = w.alias(), lb = b.alias();
    lw.set_requires_grad(true);
    lb.set_requires_grad(true);
    autograd::backward({loss_of(x, lw, lb)}, {Tensor()}, false, false);
    expect_close(gw.grad(), lw.grad(), "grad w");  // B: the local shard is the whole gradient
    expect_close(gb.grad(), lb.grad(), "grad b");
  });
}

// A position table's first rows added to a batch split S(0) (the GPT's pos_emb.weight[:T]): the
// slice's backward, which makes only the table's gradient, leaves it partial for the fused
// reduction instead of reduce-scattering it and gathering it back.
TEST(GlobalOps, ASlicedParametersGradientJoinsTheFusedReduction) {
  run_ranks(2, [](int, Communicator& c) {
    Rank r(c);
    Tensor x = logical({6, 5, 4}, 1), table = logical({8, 4}, 2);
    Tensor gt = r.global(table, line(2), "B");
    gt.set_requires_grad(true);
    Tensor loss = sum(add(r.global(x, line(2), "S(0)"), slice(gt, 0, 0, 5, 1)));
    r.log.clear();
    autograd::backward({loss}, {Tensor()}, false, false);
    ASSERT_EQ(r.log.size(), 1u);
    EXPECT_EQ(r.log[0], "all_reduce(sum) group[0,1] 128 B");  // the (8, 4) table's gradient
    Tensor lt = table.alias();
    lt.set_requires_grad(true);
    autograd::backward({sum(add(x, slice(lt, 0, 0, 5, 1)))}, {Tensor()}, false, false);
    expect_close(gt.grad(), lt.grad(), "grad table");
  });
}

// A mean over a split batch divides a partial sum by a count made broadcast: the count's
// all-reduce runs once, in the forward, and the backward (the divisor again) reuses it.
TEST(GlobalOps, ASmallReshardIsKeptForTheBackward) {
  run_ranks(2, [](int, Communicator& c) {
    Rank r(c);
    Tensor x = logical({6, 4}, 1), w = logical({4}, 2);
    Tensor gw = r.global(w, line(2), "B");
    gw.set_requires_grad(true);
    Tensor gx = r.global(x, line(2), "S(0)");
    Tensor count = sum(ones_like(sum(gx, {1})));  // P(sum): each rank its rows
    r.log.clear();
    Tensor loss = div(sum(mul(gx, gw)), count);
    ASSERT_EQ(r.log.size(), 1u);
    EXPECT_EQ(r.log[0], "all_reduce(sum) group[0,1] 4 B");  // the count
    autograd::backward({loss}, {Tensor()}, false, false);
    ASSERT_EQ(r.log.size(), 2u);
    EXPECT_EQ(r.log[1], "all_reduce(sum) group[0,1] 16 B");  // w's gradient only
    Tensor lw = w.alias();
    lw.set_requires_grad(true);
    autograd::backward({div(sum(mul(x, lw)), wrap_scalar(6.0, DType::kFloat32))}, {Tensor()}, false,
                       false);
    expect_close(gw.grad(), lw.grad(), "grad w");
    // Written in place since, the count is reduced again.
    mul_(count, wrap_scalar(2.0, DType::kFloat32));
    r.log.clear();
    Tensor halved = div(sum(mul(gx, gw)), count);
    ASSERT_EQ(r.log.size(), 1u);
    expect_close(r.full(halved), div(sum(mul(x, w)), wrap_scalar(12.0, DType::kFloat32)), "after");
  });
}

TEST(GlobalOps, ZeroGradientsAreOneFusedReduceScatter) {
  run_ranks(2, [](int, Communicator& c) {
    Rank r(c);
    // Uneven on purpose: 5 and 3 rows over 2 ranks.
    Tensor x = logical({6, 5}, 1), w = logical({5, 3}, 2), b = logical({3}, 3);
    Tensor gw = r.global(w, line(2), "S(0)"), gb = r.global(b, line(2), "S(0)");
    gw.set_requires_grad(true);
    gb.set_requires_grad(true);
    auto loss_of = [](const Tensor& x, const Tensor& w, const Tensor& b) {
      return sum(mul(add(matmul(x, w), b), add(matmul(x, w), b)));
    };
    Tensor loss = loss_of(r.global(x, line(2), "S(0)"), gw, gb);
    r.log.clear();
    autograd::backward({loss}, {Tensor()}, false, false);
    ASSERT_TRUE(gw.grad().defined() && gb.grad().defined());
    EXPECT_EQ(sbp_of(gw.grad()), "S(0)");
    EXPECT_EQ(sbp_of(gb.grad()), "S(0)");
    // Both gradients (P(sum) after the forward's all-gathers) in one buffer of 5*3 + 3 floats.
    ASSERT_EQ(r.log.size(), 1u);
    EXPECT_EQ(r.log[0], "reduce_scatter(sum) group[0,1] 72 B");

    Tensor lw = w.alias(), lb = b.alias();
    lw.set_requires_grad(true);
    lb.set_requires_grad(true);
    autograd::backward({loss_of(x, lw, lb)}, {Tensor()}, false, false);
    expect_close(r.full(gw.grad()), lw.grad(), "grad w");
    expect_close(r.full(gb.grad()), lb.grad(), "grad b");
  });
}

TEST(GlobalOps, TensorParallelMlpMatchesOneDevice) {
  run_ranks(2, [](int, Communicator& c) {
    Rank r(c);
    Tensor x = logical({5, 4}, 1), w1 = logical({4, 6}, 2), w2 = logical({6, 3}, 3);
    Tensor g1 = r.global(w1, line(2), "S(1)"), g2 = r.global(w2, line(2), "S(0)");
    g1.set_requires_grad(true);
    g2.set_requires_grad(true);
    Tensor y = matmul(gelu(matmul(r.global(x, line(2), "B"), g1)), g2);
    EXPECT_EQ(sbp_of(y), "P(sum)");
    autograd::backward({sum(mul(y, y))}, {Tensor()}, false, false);

    Tensor l1 = w1.alias(), l2 = w2.alias();
    l1.set_requires_grad(true);
    l2.set_requires_grad(true);
    Tensor ly = matmul(gelu(matmul(x, l1)), l2);
    autograd::backward({sum(mul(ly, ly))}, {Tensor()}, false, false);
    expect_close(r.full(y), ly, "forward");
    EXPECT_EQ(sbp_of(g1.grad()), "S(1)");
    expect_close(r.full(g1.grad()), l1.grad(), "grad w1");
    expect_close(r.full(g2.grad()), l2.grad(), "grad w2");
  });
}

TEST(GlobalOps, ErrorsNameShapesSbpsAndPlacements) {
  run_ranks(2, [](int, Communicator& c) {
    Rank r(c);
    Tensor a = r.global(logical({4}, 1), line(2), "S(0)");
    Tensor b = r.global(logical({4}, 2), Placement(DeviceType::kCPU, {1, 0}, {2}), "B");
    std::string e = error_of([&] { add(a, b); });
    EXPECT_NE(e.find("[add] inputs are on different placements"), std::string::npos) << e;
    EXPECT_NE(e.find("(4,) S(0) on cpu[0, 1]"), std::string::npos) << e;
    e = error_of([&] { add(a, logical({4}, 3)); });
    EXPECT_NE(e.find("mixes local and global tensors"), std::string::npos) << e;
    e = error_of([&] { matmul(a, r.global(logical({3, 2}, 1), line(2), "B")); });
    EXPECT_NE(e.find("[matmul]"), std::string::npos) << e;
  });
}

TEST(GlobalOps, ConvAndPoolingKeepBatchAndChannelSplits) {
  run_ranks(3, [](int, Communicator& c) {
    Rank r(c);
    Tensor x = logical({4, 3, 6, 6}, 1), w = logical({5, 3, 3, 3}, 2), b = logical({5}, 3);
    Tensor want = max_pool2d(conv2d(x, w, b, {1, 1}, {1, 1}), {2, 2}, {2, 2});
    // Batch split (uneven: 4 over 3 ranks) with replicated weights: no communication.
    Tensor y = max_pool2d(conv2d(r.global(x, line(3), "S(0)"), r.global(w, line(3), "B"),
                                 r.global(b, line(3), "B"), {1, 1}, {1, 1}),
                          {2, 2}, {2, 2});
    EXPECT_EQ(sbp_of(y), "S(0)");
    EXPECT_TRUE(r.log.empty()) << r.log[0];
    expect_close(r.full(y), want, "batch split");
    // Output channels split with the weight; the pooling keeps the channel split.
    Tensor z = max_pool2d(conv2d(r.global(x, line(3), "B"), r.global(w, line(3), "S(0)"),
                                 r.global(b, line(3), "S(0)"), {1, 1}, {1, 1}),
                          {2, 2}, {2, 2});
    EXPECT_EQ(sbp_of(z), "S(1)");
    expect_close(r.full(z), want, "channel split");
  });
}

TEST(GlobalOps, VocabularySplitEmbeddingIsPartialSum) {
  run_ranks(3, [](int, Communicator& c) {
    Rank r(c);
    // A table much larger than the lookup, as vocabulary-parallel tables are: 40 rows over 3
    // ranks (14, 13, 13), so moving the table would cost more than reducing the output.
    Tensor w = logical({40, 6}, 1);
    Tensor idx = Tensor::empty({2, 3}, DType::kInt64);
    for (int64_t i = 0; i < idx.numel(); ++i) idx.data<int64_t>()[i] = (13 * i + 1) % 40;
    Tensor gw = r.global(w, line(3), "S(0)");
    gw.set_requires_grad(true);
    Tensor y = embedding(gw, r.global(idx, line(3), "B"));
    EXPECT_EQ(sbp_of(y), "P(sum)");
    EXPECT_TRUE(r.log.empty()) << r.log[0];
    Tensor lw = w.alias();
    lw.set_requires_grad(true);
    Tensor want = embedding(lw, idx);
    expect_close(r.full(y), want, "lookup");

    Tensor dy = logical({2, 3, 6}, 2);
    autograd::backward({sum(mul(y, r.global(dy, line(3), "B")))}, {Tensor()}, false, false);
    autograd::backward({sum(mul(want, dy))}, {Tensor()}, false, false);
    EXPECT_EQ(sbp_of(gw.grad()), "S(0)");
    expect_close(r.full(gw.grad()), lw.grad(), "grad");
  });
}

// Each case on x split by rows, by columns and broadcast over a line of 3 ranks: values and
// gradients equal the one-device run's.
template <class Cases>
void expect_matches_one_device_on_a_line(Rank& r, const Tensor& x, const Cases& cases) {
  for (const auto& [name, f] : cases) {
    for (const char* sbp : {"S(0)", "S(1)", "B"}) {
      std::string what = std::string(name) + " of " + sbp;
      Tensor gx = r.global(x, line(3), sbp);
      gx.set_requires_grad(true);
      Tensor lx = x.alias();
      lx.set_requires_grad(true);
      Tensor want = f(lx);
      Tensor got = f(gx);
      expect_close(r.full(got), want, what);
      Tensor dy = logical(want.shape(), 7);
      autograd::backward({sum(mul(got, r.global(dy, line(3), "B")))}, {Tensor()}, false, false);
      autograd::backward({sum(mul(want, dy))}, {Tensor()}, false, false);
      expect_close(r.full(gx.grad()), lx.grad(), what + " (gradient)");
    }
  }
}

TEST(GlobalOps, ReductionGradientsMatchOneDevice) {
  using Fn = Tensor (*)(const Tensor&);
  const std::vector<std::pair<const char*, Fn>> cases = {
      {"sum", [](const Tensor& x) { return sum(x, {0}); }},
      {"prod", [](const Tensor& x) { return prod(x, {1}, true); }},
      {"amax", [](const Tensor& x) { return amax(x, {0}); }},
      {"amin", [](const Tensor& x) { return amin(x); }},
      {"max", [](const Tensor& x) { return max_dim(x, 0).first; }},
      {"min", [](const Tensor& x) { return min_dim(x, 1, true).first; }},
      {"mean", [](const Tensor& x) { return mean(x, {1}); }},
      {"var", [](const Tensor& x) { return var(x, {0}); }},
      {"logsumexp", [](const Tensor& x) { return logsumexp(x, {1}); }},
  };
  run_ranks(3, [&](int, Communicator& c) {
    Rank r(c);
    Tensor x = logical({6, 4}, 5);
    expect_matches_one_device_on_a_line(r, x, cases);
    Tensor gi = r.global(x, line(3), "S(1)");
    EXPECT_EQ(r.full(argmax(gi, 0)).shape(), (Shape{4}));
    expect_close(r.full(argmax(gi, 0)), argmax(x, 0), "argmax");
    expect_close(r.full(argmin(gi)), argmin(x), "argmin of all");
    expect_close(r.full(max_dim(gi, 0).second), max_dim(x, 0).second, "max indices");
  });
}

TEST(GlobalOps, SortScanAndTriangleGradientsMatchOneDevice) {
  using Fn = Tensor (*)(const Tensor&);
  const std::vector<std::pair<const char*, Fn>> cases = {
      {"sort", [](const Tensor& x) { return sort(x, 1, true).first; }},
      {"topk", [](const Tensor& x) { return topk(x, 2, 0).first; }},
      {"cumsum", [](const Tensor& x) { return cumsum(x, 0); }},
      {"cumsum rows", [](const Tensor& x) { return cumsum(x, 1); }},
      {"tril", [](const Tensor& x) { return tril(x, -1); }},
      {"triu", [](const Tensor& x) { return triu(x, 1); }},
  };
  run_ranks(3, [&](int, Communicator& c) {
    Rank r(c);
    Tensor x = logical({6, 4}, 5);
    expect_matches_one_device_on_a_line(r, x, cases);
  });
}

TEST(GlobalOps, MultinomialRowsAreTheSameWhicheverRankDrawsThem) {
  run_ranks(3, [](int, Communicator& c) {
    Rank r(c);
    Tensor p = add(abs(logical({7, 5}, 3)), wrap_scalar(0.1, DType::kFloat64));
    for (bool replacement : {true, false}) {
      Generator local_gen(11), split_gen(11);
      Tensor want = multinomial(p, 3, replacement, &local_gen);
      Tensor got = multinomial(r.global(p, line(3), "S(0)"), 3, replacement, &split_gen);
      EXPECT_EQ(sbp_of(got), "S(0)");
      expect_close(r.full(got), want, replacement ? "with replacement" : "without replacement");
      EXPECT_EQ(local_gen.offset(), split_gen.offset());
    }
  });
}

TEST(GlobalOps, MaskedSelectOnGlobalTensorsSaysTheShapeDependsOnTheData) {
  run_ranks(2, [](int, Communicator& c) {
    Rank r(c);
    Tensor x = r.global(logical({4, 3}, 1), line(2), "S(0)");
    std::string e = error_of([&] { masked_select(x, gt(x, wrap_scalar(0.0, DType::kFloat64))); });
    EXPECT_NE(e.find("[masked_select] the output shape depends on the data"), std::string::npos)
        << e;
  });
}

TEST(GlobalOps, InPlaceMaskedFillAndScatterKeepTheLayoutAndMatchOneDevice) {
  run_ranks(2, [](int, Communicator& c) {
    Rank r(c);
    Tensor x = logical({4, 6}, 2);
    Tensor index = Tensor::empty({4, 2}, DType::kInt64);
    for (int64_t i = 0; i < index.numel(); ++i) index.data<int64_t>()[i] = (5 * i + 1) % 6;
    Tensor want = contiguous_copy(x);
    masked_fill_(want, gt(want, wrap_scalar(0.5, DType::kFloat64)),
                 wrap_scalar(-1.0, DType::kFloat64));
    scatter_(want, 1, index, 3.0);
    for (const char* sbp : {"S(0)", "B"}) {
      Tensor gx = r.global(contiguous_copy(x), line(2), sbp);
      masked_fill_(gx, gt(gx, wrap_scalar(0.5, DType::kFloat64)),
                   wrap_scalar(-1.0, DType::kFloat64));
      scatter_(gx, 1, r.global(index, line(2), sbp), 3.0);
      EXPECT_EQ(sbp_of(gx), sbp);
      expect_close(r.full(gx), want, sbp);
    }
  });
}
