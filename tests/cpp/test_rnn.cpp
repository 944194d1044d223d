// Tier (a) for the fused LSTM and GRU layers (ops/rnn.cpp): their forwards are the cell
// recurrences written as ops, in both directions; their backward kernels (and the ops form they
// take under create_graph) match finite differences; their shape and dtype errors are the same on
// meta and cpu.
#include <gtest/gtest.h>

#include "core/autograd/engine.h"
#include "core/dispatcher.h"
#include "ops/ops.h"
#include "test_util.h"
#include "tests/cpp/numeric_check.h"

using namespace ofl::internal;
using namespace ofl::internal::numeric_check;
using ofl::internal::testing::error_of;

namespace {

constexpr int64_t kSteps = 3, kBatch = 2, kHidden = 2;

struct LstmInputs {
  Tensor x, h0, c0, w;
};

LstmInputs lstm_inputs(bool grad) {
  const DType f64 = DType::kFloat64;
  return {random({kSteps, kBatch, 4 * kHidden}, f64, 1, grad),
          random({kBatch, kHidden}, f64, 2, grad), random({kBatch, kHidden}, f64, 3, grad),
          random({4 * kHidden, kHidden}, f64, 4, grad)};
}

std::vector<Tensor> lstm_layer(const LstmInputs& in, bool reverse) {
  return dispatch(op_def("_lstm_layer"), {in.x, in.h0, in.c0, in.w}, {{"reverse", reverse}});
}

// The recurrence as ops: output (T, B, H), h_n, c_n.
std::vector<Tensor> lstm_as_ops(const LstmInputs& in, bool reverse) {
  Tensor h = in.h0, c = in.c0;
  std::vector<Tensor> outs(kSteps);
  for (int64_t s = 0; s < kSteps; ++s) {
    const int64_t t = reverse ? kSteps - 1 - s : s;
    const Tensor gates = add(select(in.x, 0, t), matmul(h, transpose(in.w, 0, 1)));
    const auto gate = [&](int64_t k) { return narrow(gates, 1, k * kHidden, kHidden); };
    c = add(mul(sigmoid(gate(1)), c), mul(sigmoid(gate(0)), tanh(gate(2))));
    h = mul(sigmoid(gate(3)), tanh(c));
    outs[t] = h;
  }
  return {stack(outs, 0), h, c};
}

// The GRU's inputs: x (T, B, 3H), h0 (B, H), weight_hh (3H, H), b_hn (H).
std::vector<Tensor> gru_inputs(bool grad) {
  const DType f64 = DType::kFloat64;
  return {random({kSteps, kBatch, 3 * kHidden}, f64, 11, grad),
          random({kBatch, kHidden}, f64, 12, grad), random({3 * kHidden, kHidden}, f64, 13, grad),
          random({kHidden}, f64, 14, grad)};
}

std::vector<Tensor> gru_layer(const std::vector<Tensor>& in, bool reverse) {
  return dispatch(op_def("_gru_layer"), in, {{"reverse", reverse}});
}

// PyTorch's GRU recurrence as ops: output (T, B, H), h_n.
std::vector<Tensor> gru_as_ops(const std::vector<Tensor>& in, bool reverse) {
  Tensor h = in[1];
  std::vector<Tensor> outs(kSteps);
  for (int64_t s = 0; s < kSteps; ++s) {
    const int64_t t = reverse ? kSteps - 1 - s : s;
    const Tensor x = select(in[0], 0, t), hh = matmul(h, transpose(in[2], 0, 1));
    const auto part = [&](const Tensor& v, int64_t k) {
      return narrow(v, 1, k * kHidden, kHidden);
    };
    const Tensor r = sigmoid(add(part(x, 0), part(hh, 0))),
                 z = sigmoid(add(part(x, 1), part(hh, 1)));
    const Tensor n = tanh(add(part(x, 2), mul(r, add(part(hh, 2), in[3]))));
    h = add(mul(sub(full({}, 1.0, DType::kFloat64), z), n), mul(z, h));
    outs[t] = h;
  }
  return {stack(outs, 0), h};
}

}  // namespace

TEST(GruLayer, ForwardIsTheCellRecurrenceInBothDirections) {
  autograd::NoGradGuard no_grad;
  const std::vector<Tensor> in = gru_inputs(false);
  for (bool reverse : {false, true}) {
    const std::vector<Tensor> fused = gru_layer(in, reverse), ops = gru_as_ops(in, reverse);
    for (size_t j = 0; j < ops.size(); ++j) expect_near(values(fused[j]), values(ops[j]), 1e-12);
  }
}

TEST(GruLayer, GradientsMatchFiniteDifferencesWithAndWithoutCreateGraph) {
  const std::vector<Tensor> weights = {random({kSteps, kBatch, kHidden}, DType::kFloat64, 15),
                                       random({kBatch, kHidden}, DType::kFloat64, 16)};
  for (bool reverse : {false, true}) {
    for (bool create_graph : {false, true}) {
      const std::vector<Tensor> in = gru_inputs(true);
      const auto loss = [&] {
        const std::vector<Tensor> out = gru_layer(in, reverse);
        return add(sum(mul(out[0], weights[0])), sum(mul(out[1], weights[1])));
      };
      autograd::backward({loss()}, {Tensor()}, false, create_graph);
      for (const Tensor& t : in) {
        const std::vector<double> numeric = numeric_grad(t, [&] {
          autograd::NoGradGuard no_grad;
          return loss().item<double>();
        });
        expect_near(values(t.grad()), numeric, 1e-6);
      }
    }
  }
}

TEST(LstmLayer, ForwardIsTheCellRecurrenceInBothDirections) {
  autograd::NoGradGuard no_grad;
  const LstmInputs in = lstm_inputs(false);
  for (bool reverse : {false, true}) {
    const std::vector<Tensor> fused = lstm_layer(in, reverse), ops = lstm_as_ops(in, reverse);
    for (size_t j = 0; j < ops.size(); ++j) expect_near(values(fused[j]), values(ops[j]), 1e-12);
  }
}

TEST(LstmLayer, GradientsMatchFiniteDifferencesWithAndWithoutCreateGraph) {
  const std::vector<Tensor> weights = {random({kSteps, kBatch, kHidden}, DType::kFloat64, 5),
                                       random({kBatch, kHidden}, DType::kFloat64, 6),
                                       random({kBatch, kHidden}, DType::kFloat64, 7)};
  for (bool reverse : {false, true}) {
    for (bool create_graph : {false, true}) {
      const LstmInputs in = lstm_inputs(true);
      const auto loss = [&] {
        const std::vector<Tensor> out = lstm_layer(in, reverse);
        Tensor total = sum(mul(out[0], weights[0]));
        for (size_t j = 1; j < 3; ++j) total = add(total, sum(mul(out[j], weights[j])));
        return total;
      };
      autograd::backward({loss()}, {Tensor()}, false, create_graph);
      for (const Tensor& t : {in.x, in.h0, in.c0, in.w}) {
        const std::vector<double> numeric = numeric_grad(t, [&] {
          autograd::NoGradGuard no_grad;
          return loss().item<double>();
        });
        expect_near(values(t.grad()), numeric, 1e-6);
      }
    }
  }
}

TEST(LstmLayer, ShapeAndDtypeErrorsAreTheSameOnMetaAndCpu) {
  const auto call = [](bool meta, Shape x, Shape h0, Shape w, DType dt) {
    const Device d = meta ? ofl::internal::testing::kMeta : Device{};
    const auto make = [&](const Shape& s) { return Tensor::empty(s, dt, d); };
    return error_of([&] {
      dispatch(op_def("_lstm_layer"), {make(x), make(h0), make({2, 2}), make(w)},
               {{"reverse", false}});
    });
  };
  for (bool meta : {false, true}) {
    EXPECT_NE(call(meta, {3, 2, 7}, {2, 2}, {8, 2}, DType::kFloat32)
                  .find("(steps, batch, 4 * hidden), got (3, 2, 7)"),
              std::string::npos);
    EXPECT_NE(call(meta, {3, 2, 8}, {2, 3}, {8, 2}, DType::kFloat32)
                  .find("h0 is (2, 3) where the input (3, 2, 8) needs (2, 2)"),
              std::string::npos);
    EXPECT_NE(call(meta, {3, 2, 8}, {2, 2}, {2, 8}, DType::kFloat32).find("weight_hh is (2, 8)"),
              std::string::npos);
  }
  EXPECT_NE(error_of<TypeError>([] {
              const auto i = [](const Shape& s) { return Tensor::empty(s, DType::kInt32); };
              dispatch(op_def("_lstm_layer"), {i({3, 2, 8}), i({2, 2}), i({2, 2}), i({8, 2})},
                       {{"reverse", false}});
            }).find("float32 or float64"),
            std::string::npos);
}

TEST(RnnLayers, BackwardOpsCheckTheirOperands) {
  const auto f = [](const Shape& s) { return Tensor::empty(s, DType::kFloat32); };
  const Tensor seq = f({3, 2, 4}), state = f({2, 4});
  const std::string lstm = error_of([&] {
    dispatch(op_def("_lstm_layer_backward"),
             {seq, state, state, state, state, f({16, 4}), f({3, 2, 5}), f({3, 2, 16}), seq},
             {{"reverse", false}});
  });
  EXPECT_NE(lstm.find("input 6 is (3, 2, 5) where the gates (3, 2, 16) need (3, 2, 4)"),
            std::string::npos)
      << lstm;
  const std::string gru = error_of([&] {
    dispatch(op_def("_gru_layer_backward"), {seq, state, state, f({16, 4}), seq, f({3, 2, 16})},
             {{"reverse", false}});
  });
  EXPECT_NE(gru.find("input 3 is (16, 4) where the gates (3, 2, 16) need (12, 4)"),
            std::string::npos)
      << gru;
  EXPECT_NE(error_of([&] {
              dispatch(op_def("_gru_layer_backward"),
                       {seq, state, state, f({12, 4}), seq, f({3, 2})}, {{"reverse", false}});
            }).find("expects the gates as (steps, batch, 4 * hidden), got (3, 2)"),
            std::string::npos);
}
