// CPU parallelism on oneTBB; small ranges run inline to keep tiny ops cheap.
#pragma once
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cstdint>

namespace ofl::internal {

// Caps the worker threads of every CPU kernel (n <= 0 lifts the cap); OFL_NUM_THREADS sets it
// at load time.
void set_num_threads(int n);
int get_num_threads();

// Work below this many elements is not worth a task.
inline constexpr int64_t kGrainSize = 32768;

// Calls f(begin, end) over [0, n) in chunks of at least `grain` elements.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
  if (n <= grain) {
    f(int64_t{0}, n);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, grain),
                    [&](const tbb::blocked_range<int64_t>& r) { f(r.begin(), r.end()); });
}

}  // namespace ofl::internal
