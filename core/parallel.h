// CPU parallelism on oneTBB; small ranges run inline to keep tiny ops cheap.
#pragma once
#include <cstdint>
#include <type_traits>

namespace ofl::internal {

// Caps the worker threads of every CPU kernel (n <= 0 lifts the cap); OFL_NUM_THREADS sets it
// at load time.
void set_num_threads(int n);
int get_num_threads();

// Work below this many elements is not worth a task.
inline constexpr int64_t kGrainSize = 32768;

namespace parallel_detail {

// oneTBB's parallel_for over [0, n), calling chunk(f, begin, end) for each chunk
// (core/parallel.cpp: TBB's templates are instantiated there once, not once per kernel).
using Chunk = void (*)(const void* f, int64_t begin, int64_t end);
void run(int64_t n, int64_t grain, Chunk chunk, const void* f);

// One copy of each loop body, called by both paths below: the kernels' loops are compiled once
// each, not once inline and once inside a task (half of the CPU kernels' build time).
template <class F>
[[gnu::noinline]] void chunk(const void* f, int64_t begin, int64_t end) {
  (*static_cast<const F*>(f))(begin, end);
}

}  // namespace parallel_detail

// Calls f(begin, end) over [0, n) in chunks of at least `grain` elements.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
  using Fn = std::remove_reference_t<F>;
  if (n <= grain) return parallel_detail::chunk<Fn>(&f, 0, n);
  parallel_detail::run(n, grain, &parallel_detail::chunk<Fn>, &f);
}

}  // namespace ofl::internal
