// Runs n ranks as threads of one process, each with its own communicator (Gloo ones meeting
// through a MemoryStore); plus small helpers to build and read 1-d tensors of any dtype.
#pragma once
#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "core/comm/gloo/gloo_communicator.h"
#include "core/tensor.h"
#include "memory_store.h"
#include "test_util.h"

namespace ofl::internal::comm::testing {

inline const std::vector<DType> kAllDTypes = {DType::kBool,     DType::kUInt8,   DType::kInt8,
                                              DType::kInt32,    DType::kInt64,   DType::kFloat16,
                                              DType::kBFloat16, DType::kFloat32, DType::kFloat64};

// Calls body(rank, communicator) on n threads, each rank's communicator from connect(rank).
// Communicators live until every thread is done, so no rank closes its connections while a peer
// still talks to it. Exceptions fail the test.
inline void run_ranks_with(int n, const std::function<std::shared_ptr<Communicator>(int)>& connect,
                           const std::function<void(int, Communicator&)>& body) {
  std::vector<std::shared_ptr<Communicator>> comms(n);
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        comms[r] = connect(r);
        body(r, *comms[r]);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    if (!errors[r]) continue;
    try {
      std::rethrow_exception(errors[r]);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "rank " << r << " of " << n << " raised: " << e.what();
    }
  }
}

// run_ranks_with Gloo communicators meeting through store.
inline void run_ranks(int n, const std::function<void(int, Communicator&)>& body,
                      Millis timeout = Millis(10000),
                      std::shared_ptr<Store> store = std::make_shared<MemoryStore>()) {
  run_ranks_with(
      n, [&](int r) { return make_gloo_communicator(store, r, n, "127.0.0.1", timeout); }, body);
}

inline Tensor make(DType dtype, const std::vector<double>& values) {
  Tensor t = Tensor::empty({static_cast<int64_t>(values.size())}, dtype);
  dispatch_all(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < values.size(); ++i)
      t.data<T>()[i] = static_cast<T>(static_cast<opmath_t<T>>(values[i]));
  });
  return t;
}

inline Tensor filled(DType dtype, int64_t n, double v) {
  return make(dtype, std::vector<double>(n, v));
}

inline std::vector<double> values(const Tensor& t) {
  std::vector<double> out(t.numel());
  dispatch_all(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < t.numel(); ++i)
      out[i] = static_cast<double>(static_cast<opmath_t<T>>(t.data<T>()[i]));
  });
  return out;
}

using ofl::internal::testing::error_of;

}  // namespace ofl::internal::comm::testing
