// Tier (a): the op registry and its cost formulas, kernel tables, devices and streams.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/stream.h"
#include "ops/kernels.h"
#include "ops/op_helpers.h"
#include "ops/ops.h"
#include "test_util.h"

using namespace ofl::internal;
using ofl::internal::testing::error_of;

namespace {

void noop_kernel(int) {}

}  // namespace

TEST(OpRegistry, EveryOpHasAUniqueNonEmptyName) {
  const auto& ops = registered_ops();
  EXPECT_GT(ops.size(), 80u);
  std::set<std::string> names;
  for (const auto& op : ops) {
    EXPECT_FALSE(op.name.empty());
    EXPECT_TRUE(names.insert(op.name).second) << "registered twice: " << op.name;
    EXPECT_GE(op.num_inputs, -1) << op.name;  // -1: a list of tensors
  }
}

TEST(OpRegistry, ArityCountsEveryTensorInputIncludingWeightsAndIndices) {
  const std::pair<const char*, int> expected[] = {
      {"where", 3},      {"layer_norm", 3},   {"rms_norm", 2},    {"embedding", 2},
      {"gather", 2},     {"index_select", 2}, {"scatter_add", 3}, {"conv2d", 3},
      {"batch_norm", 5}, {"linear", 3},       {"cat", -1},        {"zeros", 0}};
  for (auto [name, arity] : expected) {
    const OpDef* op = find_op(name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->num_inputs, arity) << name;
  }
}

TEST(OpRegistry, KnownOpsArePresentAndFindable) {
  for (const char* name :
       {"add",        "sub",        "mul",           "div",
        "matmul",     "linear",     "softmax",       "log_softmax",
        "layer_norm", "rms_norm",   "cross_entropy", "nll_loss",
        "conv2d",     "max_pool2d", "avg_pool2d",    "batch_norm",
        "embedding",  "sum",        "mean",          "reshape",
        "transpose",  "dropout",    "randn",         "scaled_dot_product_attention",
        "where",      "cat",        "gather"}) {
    const OpDef* op = find_op(name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->name, name);
  }
  EXPECT_EQ(find_op("no_such_op"), nullptr);
}

TEST(OpRegistry, DifferentiabilityFlagsMatchTheOps) {
  for (const char* name : {"add", "matmul", "softmax", "conv2d", "cross_entropy", "sum", "sort",
                           "topk", "cumsum", "tril", "scatter", "masked_select"})
    EXPECT_TRUE(find_op(name)->differentiable) << name;
  for (const char* name : {"argmax", "eq", "randn", "detach", "floor", "argsort", "multinomial"})
    EXPECT_FALSE(find_op(name)->differentiable) << name;
}

TEST(OpRegistry, SecondRegistrationOfANameIsAnInternalError) {
  const size_t before = registered_ops().size();
  EXPECT_THROW(register_ops({{.name = "add", .num_inputs = 2}}), std::logic_error);
  EXPECT_EQ(registered_ops().size(), before);
}

TEST(OpCost, ElementwiseIsOneFlopPerOutputAndCountsEveryOperandsBytes) {
  OpCost c = find_op("add")->cost({{3, 5}, {5}}, {3, 5}, DType::kFloat64);
  EXPECT_EQ(c.flops, 15);
  EXPECT_EQ(c.bytes, (15 + 5 + 15) * 8);
}

TEST(OpCost, MatmulIsTwoFlopsPerMultiplyAdd) {
  OpCost c = matmul_cost({{8, 4}, {4, 16}}, {8, 16}, DType::kFloat32);
  EXPECT_EQ(c.flops, 2.0 * 8 * 16 * 4);
  EXPECT_EQ(c.bytes, (8 * 4 + 4 * 16 + 8 * 16) * 4.0);
  OpCost batched = find_op("matmul")->cost({{3, 8, 4}, {3, 4, 16}}, {3, 8, 16}, DType::kFloat16);
  EXPECT_EQ(batched.flops, 2.0 * 3 * 8 * 16 * 4);
  EXPECT_EQ(batched.bytes, (3 * 8 * 4 + 3 * 4 * 16 + 3 * 8 * 16) * 2.0);
}

TEST(OpCost, Conv2dCountsMacsPerOutputFromTheGroupedWeight) {
  // x (2, 6, 10, 10), groups 2 so w (4, 3, 3, 3), y (2, 4, 8, 8).
  OpCost c = conv2d_cost({{2, 6, 10, 10}, {4, 3, 3, 3}}, {2, 4, 8, 8}, DType::kFloat32);
  EXPECT_EQ(c.flops, 2.0 * (2 * 4 * 8 * 8) * (3 * 3 * 3));
  EXPECT_EQ(c.bytes, (2 * 6 * 10 * 10 + 4 * 27 + 2 * 4 * 8 * 8) * 4.0);
  OpCost with_bias =
      find_op("conv2d")->cost({{2, 6, 10, 10}, {4, 3, 3, 3}, {4}}, {2, 4, 8, 8}, DType::kFloat32);
  EXPECT_EQ(with_bias.flops, c.flops);
  EXPECT_EQ(with_bias.bytes, c.bytes + 4 * 4.0);
}

TEST(KernelTable, MissingSlotThrowsNamingTheTableAndDevice) {
  KernelTable<void(int)> table("my_kernel");
  std::string msg = error_of([&] { table.get(DeviceType::kCPU); });
  EXPECT_EQ(msg, "[my_kernel] has no cpu kernel in this build");
  table.set(DeviceType::kCPU, noop_kernel);
  EXPECT_EQ(table.get(DeviceType::kCPU), &noop_kernel);
  msg = error_of([&] { table.get(DeviceType::kCUDA); });
  EXPECT_EQ(msg, "[my_kernel] has no cuda kernel in this build");
  EXPECT_STREQ(table.op(), "my_kernel");
}

TEST(KernelTable, EveryBuiltInTableHasAKernelForEachBackendOfTheBuild) {
  // Every table a backend registers into exists once the library is loaded.
  ASSERT_GE(kernel_tables().size(), 30u);
#ifdef ONEFLOWLIKE_WITH_CUDA
  const bool cuda = true;
  EXPECT_NE(runtime_for(DeviceType::kCUDA), nullptr);
#else
  const bool cuda = false;  // a CPU-only build: every CUDA call names the kernel it lacks
  EXPECT_EQ(runtime_for(DeviceType::kCUDA), nullptr);
  const std::string msg = error_of([] { sort_kernel().get(DeviceType::kCUDA); });
  EXPECT_EQ(msg, "[sort_kernel] has no cuda kernel in this build");
#endif
  for (const KernelTableBase* table : kernel_tables()) {
    EXPECT_TRUE(table->has(DeviceType::kCPU)) << table->op();
    // Host-only tables (LAPACK routines cuSOLVER lacks) run on a host copy for every device.
    if (!table->host_only()) EXPECT_EQ(table->has(DeviceType::kCUDA), cuda) << table->op();
  }
}

TEST(Device, ParseAndStrRoundTrip) {
  EXPECT_EQ(Device::parse("cpu"), (Device{DeviceType::kCPU, 0}));
  EXPECT_EQ(Device::parse("cuda"), (Device{DeviceType::kCUDA, 0}));
  EXPECT_EQ(Device::parse("cuda:1"), (Device{DeviceType::kCUDA, 1}));
  EXPECT_EQ(Device::parse("cuda:1").str(), "cuda:1");
  EXPECT_EQ(Device{}.str(), "cpu");
  EXPECT_STREQ(device_type_name(DeviceType::kCUDA), "cuda");
}

TEST(Stream, NestedGuardsRestoreTheEnclosingStream) {
  Device dev{DeviceType::kCUDA, 0};
  int outer_handle = 0, inner_handle = 0;
  ASSERT_EQ(current_stream(dev).handle, nullptr);
  {
    StreamGuard outer(Stream{dev, &outer_handle});
    EXPECT_EQ(current_stream(dev), (Stream{dev, &outer_handle}));
    {
      StreamGuard inner(Stream{dev, &inner_handle});
      EXPECT_EQ(current_stream(dev).handle, &inner_handle);
      {
        StreamGuard same_again(Stream{dev, &inner_handle});
        EXPECT_EQ(current_stream(dev).handle, &inner_handle);
      }
      EXPECT_EQ(current_stream(dev).handle, &inner_handle);
    }
    EXPECT_EQ(current_stream(dev).handle, &outer_handle);
    EXPECT_EQ(current_stream(Device{}).handle, nullptr) << "the CPU stream is separate";
  }
  EXPECT_EQ(current_stream(dev).handle, nullptr);
}

TEST(Stream, CurrentStreamIsPerThread) {
  Device dev{DeviceType::kCUDA, 0};
  int handle = 0;
  StreamGuard guard(Stream{dev, &handle});
  void* seen_elsewhere = &handle;
  std::thread([&] { seen_elsewhere = current_stream(dev).handle; }).join();
  EXPECT_EQ(seen_elsewhere, nullptr);
  EXPECT_EQ(current_stream(dev).handle, &handle);
}
