// Signature selection (sbp/select.h) on its own: candidates priced by the boxing planner's
// transitions, the roofline of each candidate's compute and the reductions partial outputs owe.
#include <gtest/gtest.h>

#include "boxing/search.h"
#include "sbp/select.h"
#include "test_util.h"

using namespace ofl::internal;
using ofl::internal::testing::error_of;

namespace {

// A line of 8 ranks on one H100 node (or the ranks and spec given), priced by the boxing planner
// itself.
struct Line {
  Placement placement;
  PlanCache cache;
  explicit Line(Placement p = {DeviceType::kCPU, {0, 1, 2, 3, 4, 5, 6, 7}, {8}},
                ClusterSpec spec = ClusterSpec::h100_ib(1, 8))
      : placement(std::move(p)), cache(std::move(spec)) {}
  TransitionCost transition = [this](const Shape& s, DType t, const NdSbp& from, const NdSbp& to) {
    auto plan = cache.get(s, t, placement, from, placement, to);
    return Transition{plan->seconds, plan->num_communication_steps()};
  };
  std::vector<Shape> shapes;  // kept alive for the calls' inputs
  std::vector<NdSbp> layouts;

  SbpCall call(const char* op, std::vector<Shape> in, const std::vector<std::string>& sbps,
               const std::vector<Shape>& out) {
    shapes = std::move(in);
    layouts.clear();
    layouts.reserve(sbps.size());
    SbpCall c{.def = &op_def(op),
              .out_shapes = &out,
              .out_dtype = DType::kFloat32,
              .placement = &placement};
    for (size_t i = 0; i < shapes.size(); ++i)
      c.in.push_back({&shapes[i], DType::kFloat32, &layouts.emplace_back(NdSbp::parse(sbps[i]))});
    return c;
  }
  double roofline(const Shape& shape, int inputs) const {
    const double elems = static_cast<double>(numel_of(shape));
    return cache.cluster().compute(elems, elems * (inputs + 1) * 4, DType::kFloat32);
  }
};

const Shape kBig{4096, 4096};

}  // namespace

TEST(Select, ComputeDecidesBetweenSignaturesThatCommunicateAlike) {
  // A partial times a replicated tensor: keep it partial (the reduction is owed by the output)
  // or reduce-scatter first; both cost one reduce-scatter, but the second multiplies 1/8 of it.
  Line line;
  const std::vector<Shape> out{kBig};
  const SbpCall call = line.call("mul", {kBig, kBig}, {"P", "B"}, out);
  const SignatureChoice c = select_signature(call, line.cache.cluster(), line.transition);
  EXPECT_TRUE(c.sig.out[0][0].is_split()) << c.sig.str();
  EXPECT_DOUBLE_EQ(c.compute_seconds, line.roofline({512, 4096}, 2));
  EXPECT_GT(c.boxing_seconds, 0);
  EXPECT_EQ(c.owed_seconds, 0);
}

TEST(Select, APartialOutputOwesItsReduction) {
  // x split on the contracted axis: S(1), S(0) -> P(sum), with the reduction of the small
  // output owed, beats gathering x (the weight is sliced locally).
  Line line;
  const std::vector<Shape> out{{64, 4096}};
  const SbpCall call = line.call("matmul", {{64, 4096}, kBig}, {"S(1)", "B"}, out);
  const SignatureChoice c = select_signature(call, line.cache.cluster(), line.transition);
  EXPECT_EQ(c.sig.str(), "S(1), S(0) -> P(sum)");
  EXPECT_GT(c.owed_seconds, 0);
  EXPECT_EQ(
      c.boxing_seconds,  // the weight's local slice
      line.transition(kBig, DType::kFloat32, NdSbp::parse("B"), NdSbp::parse("S(0)")).seconds);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 64 * 512 * 4096);
}

TEST(Select, SplitsOfReplicatedInputsAreRankedWithoutTheirComputeSaving) {
  // Cutting two replicated tensors would compute 1/8 each, but one op cannot know whether its
  // consumers gather the pieces again: it stays replicated and says what that costs.
  Line line;
  const std::vector<Shape> out{kBig};
  const SbpCall call = line.call("mul", {kBig, kBig}, {"B", "B"}, out);
  const SignatureChoice c = select_signature(call, line.cache.cluster(), line.transition);
  EXPECT_EQ(c.sig.str(), "B, B -> B");
  EXPECT_DOUBLE_EQ(c.compute_seconds, line.roofline(kBig, 2));
  EXPECT_EQ(c.price(), c.compute_seconds);
}

TEST(Select, AnInPlaceCallKeepsSelfsLayoutOrRaisesNamingTheOp) {
  Line line;
  const std::vector<Shape> out{kBig};
  SbpCall call = line.call("add_", {kBig, kBig}, {"S(1)", "S(0)"}, out);
  call.inplace = true;
  const SignatureChoice c = select_signature(call, line.cache.cluster(), line.transition);
  EXPECT_EQ(c.sig.str(), "S(1), S(1) -> S(1)");

  SbpCall reduce = line.call("sum", {kBig}, {"S(0)"}, out);
  reduce.inplace = true;  // as if sum wrote into its input: S(0) -> S(0) is not among its rules
  const std::vector<Shape> scalar{{}};
  reduce.out_shapes = &scalar;
  Attrs attrs{{"axes", std::vector<int64_t>{}}, {"keepdim", false}, {"dtype", DType::kFloat32}};
  reduce.attrs = &attrs;
  EXPECT_NE(error_of([&] { candidate_signatures(reduce); }).find("[sum] no signature keeps"),
            std::string::npos);
}

TEST(Select, KeysAndValuesSplitOnTheSequenceStreamInsteadOfBeingGathered) {
  // Attention with q, k and v split on the sequence: the query-row signature wants k and v
  // whole, but the op streams them around the ring (flash_attention's streamed inputs): their
  // gathers cost what outlasts the compute, plus the exchanges' latency (a gather of one
  // element a position), and no conversion is made.
  Line line;
  const Shape qkv{1, 16, 8192, 128}, lse{1, 16, 8192};
  const std::vector<Shape> out{qkv, lse};
  const SbpCall call = line.call("flash_attention", {qkv, qkv, qkv}, {"S(2)", "S(2)", "S(2)"}, out);
  const SignatureChoice c = select_signature(call, line.cache.cluster(), line.transition);
  EXPECT_EQ(c.sig.str(), "S(2), B, B -> S(2), S(2)");
  const NdSbp seq = NdSbp::parse("S(2)"), b = NdSbp::parse("B");
  const double gathers = 2 * line.transition(qkv, DType::kFloat32, seq, b).seconds;
  const double hops = line.transition({1, 1, 8192, 1}, DType::kFloat32, seq, b).seconds;
  EXPECT_GT(hops, 0);
  EXPECT_DOUBLE_EQ(c.boxing_seconds, std::max(0.0, gathers - c.compute_seconds) + hops);
  EXPECT_GT(c.compute_seconds, 0);
}

TEST(Select, AShortSequenceIsNotStreamedWhereTheRingsLatencyOutweighsItsBytes) {
  // 64 positions of 4 heads on 4 CPU ranks over loopback: the ring's exchanges cost more than
  // moving so few bytes at once, so another signature wins (measured there, the ring took 32 ms
  // a forward and backward where gathering k and v took 19).
  Line line({DeviceType::kCPU, {0, 1, 2, 3}, {4}}, ClusterSpec::cpu_loopback(4));
  const Shape qkv{4, 4, 64, 32}, lse{4, 4, 64};
  const std::vector<Shape> out{qkv, lse};
  for (bool causal : {true, false}) {
    SbpCall call = line.call("flash_attention", {qkv, qkv, qkv}, {"S(2)", "S(2)", "S(2)"}, out);
    const Attrs attrs{{"scale", 0.1}, {"causal", causal}};
    call.attrs = &attrs;
    const SignatureChoice c = select_signature(call, line.cache.cluster(), line.transition);
    EXPECT_NE(c.sig.str(), "S(2), B, B -> S(2), S(2)") << (causal ? "causal" : "full");
  }
}

TEST(Select, CausalAttentionIsPricedOnItsBusiestShard) {
  // Causal rows late in the sequence see more keys: split on the query rows, the last of 8
  // shards computes 15/16 of its rows x keys, where a heads split computes half on every rank.
  // So the heads split (an all-to-all of q, k and v) wins, and without the mask the ring does.
  Line line;
  const Shape qkv{1, 16, 8192, 128}, lse{1, 16, 8192};
  const std::vector<Shape> out{qkv, lse};
  for (bool causal : {true, false}) {
    SbpCall call = line.call("flash_attention", {qkv, qkv, qkv}, {"S(2)", "S(2)", "S(2)"}, out);
    const Attrs attrs{{"scale", 0.1}, {"causal", causal}};
    call.attrs = &attrs;
    const SignatureChoice c = select_signature(call, line.cache.cluster(), line.transition);
    EXPECT_EQ(c.sig.str(), causal ? "S(1), S(1), S(1) -> S(1), S(1)" : "S(2), B, B -> S(2), S(2)");
    const NdSbpSignature rows{{NdSbp::parse("S(2)"), NdSbp::parse("B"), NdSbp::parse("B")},
                              {NdSbp::parse("S(2)"), NdSbp::parse("S(2)")}};
    const double full = compute_seconds(call, rows, line.cache.cluster());
    // Heads: 2 x 8192 x 8192 pairs, half seen; rows: 16 x 1024 x 8192, 15/16 seen.
    if (causal) EXPECT_NEAR(c.compute_seconds / full, 8193.0 / 15361, 0.03);
  }
  // In the load-balanced order for the 8 ranks (balance 8: each shard holds a chunk from each
  // end of the sequence), every shard sees half its rows x keys: the ring, its exchanges hidden.
  SbpCall call = line.call("flash_attention", {qkv, qkv, qkv}, {"S(2)", "S(2)", "S(2)"}, out);
  const Attrs attrs{{"scale", 0.1}, {"causal", true}, {"balance", int64_t(8)}};
  call.attrs = &attrs;
  const SignatureChoice c = select_signature(call, line.cache.cluster(), line.transition);
  EXPECT_EQ(c.sig.str(), "S(2), B, B -> S(2), S(2)");
  const Attrs unmasked{{"scale", 0.1}, {"causal", false}, {"balance", int64_t(0)}};
  call.attrs = &unmasked;
  EXPECT_NEAR(c.compute_seconds / compute_seconds(call, c.sig, line.cache.cluster()), 0.5, 0.01);
}

TEST(Select, OnlyADeclaredInputSplitAlongItsStreamedDimStreams) {
  const OpDef& attention = op_def("flash_attention");
  const NdSbp b = NdSbp::parse("B"), seq = NdSbp::parse("S(2)"), heads = NdSbp::parse("S(1)");
  EXPECT_EQ(streamed_axes(attention, 1, seq, b), (std::vector<int64_t>{0}));
  EXPECT_TRUE(streamed_axes(attention, 0, seq, b).empty());  // q is not streamed
  EXPECT_TRUE(streamed_axes(attention, 1, heads, b).empty());
  EXPECT_TRUE(streamed_axes(op_def("matmul"), 1, seq, b).empty());
  // On a 2-d mesh: the sequence axis streams where the other axis is already as wanted.
  EXPECT_EQ(streamed_axes(attention, 2, NdSbp::parse("(S(0), S(2))"), NdSbp::parse("(S(0), B)")),
            (std::vector<int64_t>{1}));
  EXPECT_TRUE(
      streamed_axes(attention, 2, NdSbp::parse("(B, S(2))"), NdSbp::parse("(S(0), B)")).empty());
}
