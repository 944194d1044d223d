// The collective checks that every communicator backend must pass: one shared body per check,
// run by the Gloo tests (CPU tensors) and the NCCL tests (rank r on cuda:r). Each check is one
// rank's side: call it from every rank's body with that rank's communicator. Values are small
// numbers every dtype holds exactly, so every result is compared for equality.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "core/comm/communicator.h"
#include "core/tensor.h"
#include "gloo_test_util.h"  // testing::make / values / kAllDTypes: CPU tensors

namespace ofl::internal::comm::checks {

// Where a backend's ranks keep their tensors, and how a check moves values there and back.
struct Backend {
  Device (*device)(int rank);
  Tensor (*upload)(const Tensor& cpu, int rank);  // a copy of a CPU tensor on device(rank)
  Tensor (*download)(const Tensor& t);            // a copy of t on the CPU

  // A 1-d tensor of dtype dt holding v, on rank's device.
  Tensor make(DType dt, const std::vector<double>& v, int rank) const {
    return upload(testing::make(dt, v), rank);
  }
  Tensor empty(int64_t n, DType dt, int rank) const { return Tensor::empty({n}, dt, device(rank)); }
  std::vector<double> values(const Tensor& t) const { return testing::values(download(t)); }
};

// CPU tensors, used as they are (Gloo).
inline const Backend kCpu = {[](int) { return Device{}; }, [](const Tensor& t, int) { return t; },
                             [](const Tensor& t) { return t; }};

inline const std::vector<ReduceOp> kOps = {ReduceOp::kSum, ReduceOp::kProduct, ReduceOp::kMax,
                                           ReduceOp::kMin};
inline const std::vector<DType> kFloating = {DType::kFloat16, DType::kBFloat16, DType::kFloat32,
                                             DType::kFloat64};

// Small values every dtype holds exactly; products stay within int8 and bfloat16.
inline double value(ReduceOp op, DType dt, int rank, int64_t i) {
  if (dt == DType::kBool) return (rank + i) % 3 == 0;
  if (op == ReduceOp::kProduct) return 1 + (rank + i) % 2;
  return (rank + 1) + i % 3;
}

inline std::vector<double> inputs(ReduceOp op, DType dt, int rank, int64_t n) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = value(op, dt, rank, i);
  return v;
}

// The reduction over ranks of value(op, dt, r, i), with bool sum = or and product = and.
inline double expected(ReduceOp op, DType dt, int size, int64_t i) {
  double acc = value(op, dt, 0, i);
  for (int r = 1; r < size; ++r) {
    double x = value(op, dt, r, i);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg:
        acc = dt == DType::kBool ? (acc || x) : acc + x;
        break;
      case ReduceOp::kProduct:
        acc = dt == DType::kBool ? (acc && x) : acc * x;
        break;
      case ReduceOp::kMax:
        acc = std::max(acc, x);
        break;
      case ReduceOp::kMin:
        acc = std::min(acc, x);
        break;
    }
  }
  return op == ReduceOp::kAvg ? acc / size : acc;
}

// Block offsets of counts: off[r] is where rank r's block starts, off[n] the total.
inline std::vector<int64_t> offsets(const std::vector<int64_t>& counts) {
  std::vector<int64_t> off(counts.size() + 1, 0);
  std::partial_sum(counts.begin(), counts.end(), off.begin() + 1);
  return off;
}

// The first n of counts.
inline std::vector<int64_t> first(std::vector<int64_t> counts, int n) {
  counts.resize(n);
  return counts;
}

// all_reduce of every op but avg on every dtype.
inline void check_all_reduce_every_op(const Backend& b, Communicator& c) {
  const int rank = c.rank(), n = c.size();
  for (DType dt : testing::kAllDTypes)
    for (ReduceOp op : kOps) {
      Tensor t = b.make(dt, inputs(op, dt, rank, 7), rank);
      c.all_reduce(t, op);
      auto got = b.values(t);
      for (int64_t i = 0; i < 7; ++i)
        EXPECT_EQ(got[i], expected(op, dt, n, i))
            << dtype_name(dt) << " " << reduce_op_name(op) << " n=" << n << " i=" << i;
    }
}

// all_reduce avg on the floating dtypes: the sum divided by the number of ranks.
inline void check_all_reduce_avg(const Backend& b, Communicator& c) {
  const int rank = c.rank(), n = c.size();
  for (DType dt : kFloating) {
    Tensor t = b.make(dt, inputs(ReduceOp::kAvg, dt, rank, 5), rank);
    c.all_reduce(t, ReduceOp::kAvg);
    auto got = b.values(t);
    for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(got[i], expected(ReduceOp::kAvg, dt, n, i));
  }
}

// all_gather on every dtype: each rank's block at its rank.
inline void check_all_gather(const Backend& b, Communicator& c) {
  const int rank = c.rank(), n = c.size();
  for (DType dt : testing::kAllDTypes) {
    Tensor out = b.empty(2 * n, dt, rank);
    c.all_gather(b.make(dt, {double(rank % 2), 1.0}, rank), out);
    auto got = b.values(out);
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(got[2 * r], r % 2) << dtype_name(dt);
      EXPECT_EQ(got[2 * r + 1], 1.0);
    }
  }
}

// all_gather_v of uneven blocks, one empty, concatenated in rank order.
inline void check_all_gather_v(const Backend& b, Communicator& c, const std::vector<DType>& dts) {
  const int rank = c.rank(), n = c.size();
  auto counts = first({3, 0, 1, 2}, n);
  auto off = offsets(counts);
  for (DType dt : dts) {
    std::vector<double> mine(counts[rank]);
    for (int64_t i = 0; i < counts[rank]; ++i) mine[i] = dt == DType::kBool ? 1 : rank + i;
    Tensor out = b.empty(off[n], dt, rank);
    c.all_gather_v(b.make(dt, mine, rank), out, counts);
    auto got = b.values(out);
    for (int r = 0; r < n; ++r)
      for (int64_t i = 0; i < counts[r]; ++i)
        EXPECT_EQ(got[off[r] + i], dt == DType::kBool ? 1 : r + i) << dtype_name(dt);
  }
}

// reduce_scatter of every op but avg on every dtype: each rank gets its block's reduction.
inline void check_reduce_scatter(const Backend& b, Communicator& c) {
  const int rank = c.rank(), n = c.size();
  const int64_t block = 3;
  for (DType dt : testing::kAllDTypes)
    for (ReduceOp op : kOps) {
      Tensor out = b.empty(block, dt, rank);
      c.reduce_scatter(b.make(dt, inputs(op, dt, rank, block * n), rank), out, op);
      auto got = b.values(out);
      for (int64_t i = 0; i < block; ++i)
        EXPECT_EQ(got[i], expected(op, dt, n, rank * block + i))
            << dtype_name(dt) << " " << reduce_op_name(op) << " n=" << n;
    }
}

// reduce_scatter_v of uneven blocks, one empty, with sum, max and (floating) avg.
inline void check_reduce_scatter_v(const Backend& b, Communicator& c) {
  const int rank = c.rank(), n = c.size();
  auto counts = first({2, 0, 5, 1}, n);
  auto off = offsets(counts);
  for (DType dt : {DType::kUInt8, DType::kInt32, DType::kFloat16, DType::kFloat32})
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kAvg}) {
      if (op == ReduceOp::kAvg && !is_floating(dt)) continue;
      Tensor out = b.empty(counts[rank], dt, rank);
      c.reduce_scatter_v(b.make(dt, inputs(op, dt, rank, off[n]), rank), out, counts, op);
      auto got = b.values(out);
      for (int64_t i = 0; i < counts[rank]; ++i)
        EXPECT_EQ(got[i], expected(op, dt, n, off[rank] + i)) << dtype_name(dt);
    }
}

// all_to_all sends block j to rank j, also when the output is the input.
inline void check_all_to_all(const Backend& b, Communicator& c, const std::vector<DType>& dts) {
  const int rank = c.rank(), n = c.size();
  for (DType dt : dts) {
    std::vector<double> mine(2 * n);
    for (int j = 0; j < n; ++j)
      for (int k = 0; k < 2; ++k)
        mine[2 * j + k] = dt == DType::kBool ? (rank + j + k) % 2 : 10 * rank + j + k;
    Tensor out = b.empty(2 * n, dt, rank);
    c.all_to_all(b.make(dt, mine, rank), out);
    auto got = b.values(out);
    for (int r = 0; r < n; ++r)
      for (int k = 0; k < 2; ++k)
        EXPECT_EQ(got[2 * r + k], dt == DType::kBool ? (r + rank + k) % 2 : 10 * r + rank + k);
    Tensor inplace = b.make(dt, mine, rank);
    c.all_to_all(inplace, inplace);
    EXPECT_EQ(b.values(inplace), got);
  }
}

// all_to_all_v: rank i sends (i + j) % 3 elements to rank j, each 10 * i + j.
inline void check_all_to_all_v(const Backend& b, Communicator& c) {
  const int rank = c.rank(), n = c.size();
  auto count = [](int i, int j) -> int64_t { return (i + j) % 3; };
  for (DType dt : {DType::kUInt8, DType::kInt64, DType::kBFloat16, DType::kFloat32}) {
    std::vector<int64_t> send(n), recv(n);
    std::vector<double> mine;
    for (int j = 0; j < n; ++j) {
      send[j] = count(rank, j);
      recv[j] = count(j, rank);
      for (int64_t k = 0; k < send[j]; ++k) mine.push_back(10 * rank + j);
    }
    Tensor out = b.empty(std::accumulate(recv.begin(), recv.end(), int64_t{0}), dt, rank);
    c.all_to_all_v(b.make(dt, mine, rank), send, out, recv);
    auto got = b.values(out);
    size_t at = 0;
    for (int j = 0; j < n; ++j)
      for (int64_t k = 0; k < recv[j]; ++k) EXPECT_EQ(got[at++], 10 * j + rank);
  }
}

// broadcast copies root's tensor to every rank.
inline void check_broadcast(const Backend& b, Communicator& c, int root,
                            const std::vector<DType>& dts) {
  const int rank = c.rank();
  for (DType dt : dts) {
    Tensor t = b.make(
        dt, rank == root ? std::vector<double>{1, 0, 1} : std::vector<double>{0, 0, 0}, rank);
    c.broadcast(t, root);
    EXPECT_EQ(b.values(t), (std::vector<double>{1, 0, 1})) << dtype_name(dt);
  }
}

// reduce with sum, min and (floating) avg lands on root and leaves the other ranks untouched.
inline void check_reduce(const Backend& b, Communicator& c, int root) {
  const int rank = c.rank(), n = c.size();
  for (DType dt : testing::kAllDTypes)
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kAvg}) {
      if (op == ReduceOp::kAvg && !is_floating(dt)) continue;
      auto mine = inputs(op, dt, rank, 6);
      Tensor t = b.make(dt, mine, rank);
      c.reduce(t, root, op);
      auto got = b.values(t);
      for (int64_t i = 0; i < 6; ++i)
        EXPECT_EQ(got[i], rank == root ? expected(op, dt, n, i) : mine[i])
            << dtype_name(dt) << " root " << root;
    }
}

// Element i of rank r's block in the gather and scatter checks.
inline double block_value(DType dt, int r, int64_t i) {
  return dt == DType::kBool ? (r + i) % 2 : 10 * r + i;
}

// gather of equal blocks and of uneven ones, one empty, collects them in rank order on root.
inline void check_gather(const Backend& b, Communicator& c, int root,
                         const std::vector<DType>& dts) {
  const int rank = c.rank(), n = c.size();
  auto counts = first({1, 3, 0, 2}, n);
  auto off = offsets(counts);
  for (DType dt : dts) {
    auto v = [&](int r, int64_t i) { return block_value(dt, r, i); };
    Tensor out = rank == root ? b.empty(2 * n, dt, rank) : Tensor();
    c.gather(b.make(dt, {v(rank, 0), v(rank, 1)}, rank), out, root);
    std::vector<double> mine;
    for (int64_t i = 0; i < counts[rank]; ++i) mine.push_back(v(rank, i));
    Tensor out_v = rank == root ? b.empty(off[n], dt, rank) : Tensor();
    c.gather(b.make(dt, mine, rank), out_v, root, counts);
    if (rank != root) continue;
    auto got = b.values(out), got_v = b.values(out_v);
    for (int r = 0; r < n; ++r) {
      for (int64_t i = 0; i < 2; ++i) EXPECT_EQ(got[2 * r + i], v(r, i));
      for (int64_t i = 0; i < counts[r]; ++i) EXPECT_EQ(got_v[off[r] + i], v(r, i));
    }
  }
}

// scatter of equal blocks and of uneven ones (the first n of counts) from root.
inline void check_scatter(const Backend& b, Communicator& c, int root,
                          const std::vector<DType>& dts, const std::vector<int64_t>& all_counts) {
  const int rank = c.rank(), n = c.size();
  auto counts = first(all_counts, n);
  for (DType dt : dts) {
    auto v = [&](int r, int64_t i) { return block_value(dt, r, i); };
    std::vector<double> all, all_v;
    for (int r = 0; r < n; ++r) {
      for (int64_t i = 0; i < 2; ++i) all.push_back(v(r, i));
      for (int64_t i = 0; i < counts[r]; ++i) all_v.push_back(v(r, i));
    }
    Tensor out = b.empty(2, dt, rank);
    c.scatter(rank == root ? b.make(dt, all, rank) : Tensor(), out, root);
    EXPECT_EQ(b.values(out), (std::vector<double>{v(rank, 0), v(rank, 1)}));
    Tensor out_v = b.empty(counts[rank], dt, rank);
    c.scatter(rank == root ? b.make(dt, all_v, rank) : Tensor(), out_v, root, counts);
    auto got = b.values(out_v);
    for (int64_t i = 0; i < counts[rank]; ++i) EXPECT_EQ(got[i], v(rank, i));
  }
}

}  // namespace ofl::internal::comm::checks
