#include "core/parallel.h"

#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>

#include <cstdlib>
#include <memory>
#include <mutex>

namespace ofl::internal {

namespace {

std::mutex threads_mu;
std::unique_ptr<tbb::global_control> limit;

// OFL_NUM_THREADS (set by the launcher to split the cores among local ranks) caps oneTBB.
const bool threads_from_env = [] {
  if (const char* env = std::getenv("OFL_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n > 0) set_num_threads(n);
  }
  return true;
}();

}  // namespace

void set_num_threads(int n) {
  std::lock_guard<std::mutex> lock(threads_mu);
  limit.reset();
  if (n > 0)
    limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                  static_cast<size_t>(n));
}

void parallel_detail::run(int64_t n, int64_t grain, Chunk chunk, const void* f) {
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, grain),
                    [&](const tbb::blocked_range<int64_t>& r) { chunk(f, r.begin(), r.end()); });
}

int get_num_threads() {
  (void)threads_from_env;
  return static_cast<int>(
      tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
}

}  // namespace ofl::internal
