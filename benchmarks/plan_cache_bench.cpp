// Plan-cache latency for benchmarks/bench_boxing.py: PlanCache::get for the same key, --hits
// times in each of --rounds rounds (ns per hit: the best round's mean), and for --misses distinct
// keys (ns per miss: planning plus insertion; the first get of each key). Every reshard() looks
// its plan up this way, so a hit is the planning overhead a steady-state reshard pays.
// One JSON line per case on stdout:
//   {"case": ..., "kind": "hit"|"miss", "ns": ..., "calls": ..., "steps": ...}
//
// Usage: plan_cache_bench [--hits 100000] [--misses 10000] [--rounds 5]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "boxing/search.h"

namespace {

using Clock = std::chrono::steady_clock;
using ofl::internal::ClusterSpec;
using ofl::internal::DType;
using ofl::internal::NdSbp;
using ofl::internal::Placement;
using ofl::internal::PlanCache;
using ofl::internal::Shape;

struct Case {
  std::string name;
  Placement placement;
  Shape shape;
  NdSbp from, to;
};

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void print(const Case& c, const char* kind, double ns, int64_t calls, size_t steps) {
  std::printf(
      "{\"case\": \"%s\", \"kind\": \"%s\", \"ns\": %.1f, \"calls\": %lld, \"steps\": %zu}\n",
      c.name.c_str(), kind, ns, static_cast<long long>(calls), steps);
  std::fflush(stdout);
}

// The same key `hits` times per round, after one miss that plans it.
void bench_hits(const Case& c, int64_t hits, int rounds) {
  PlanCache cache(ClusterSpec::cpu_loopback(int(c.placement.size())));
  auto first = cache.get(c.shape, DType::kFloat32, c.placement, c.from, c.placement, c.to);
  size_t sink = 0;
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < hits; ++i)
      sink +=
          cache.get(c.shape, DType::kFloat32, c.placement, c.from, c.placement, c.to)->steps.size();
    best = std::min(best, seconds_since(t0) / double(hits));
  }
  if (cache.misses() != 1 || cache.hits() != hits * rounds) {
    std::fprintf(stderr, "plan_cache_bench: expected 1 miss and %lld hits, got %lld and %lld\n",
                 static_cast<long long>(hits * rounds), static_cast<long long>(cache.misses()),
                 static_cast<long long>(cache.hits()));
    std::exit(1);
  }
  print(c, "hit", best * 1e9, hits, sink / size_t(hits * rounds));
  (void)first;
}

// `misses` distinct keys (the first axis of the shape varies), each planned once.
void bench_misses(const Case& c, int64_t misses) {
  PlanCache cache(ClusterSpec::cpu_loopback(int(c.placement.size())));
  size_t sink = 0;
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < misses; ++i) {
    Shape s = c.shape;
    s[0] += i;
    sink += cache.get(s, DType::kFloat32, c.placement, c.from, c.placement, c.to)->steps.size();
  }
  const double per = seconds_since(t0) / double(misses);
  if (cache.misses() != misses) {
    std::fprintf(stderr, "plan_cache_bench: expected %lld misses, got %lld\n",
                 static_cast<long long>(misses), static_cast<long long>(cache.misses()));
    std::exit(1);
  }
  print(c, "miss", per * 1e9, misses, sink / size_t(misses));
}

int64_t arg_int(int argc, char** argv, const char* name, int64_t fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atoll(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t hits = arg_int(argc, argv, "--hits", 100000);
  const int64_t misses = arg_int(argc, argv, "--misses", 10000);
  const int rounds = int(arg_int(argc, argv, "--rounds", 5));
  const Placement line4 = Placement::all(ofl::internal::DeviceType::kCPU, 4);
  const Placement mesh22(ofl::internal::DeviceType::kCPU, {0, 1, 2, 3}, {2, 2});
  const std::vector<Case> cases = {
      {"S(0)->B 1-d x4", line4, {4096, 1024}, NdSbp::parse("S(0)"), NdSbp::parse("B")},
      {"S(0)->S(1) 1-d x4", line4, {4096, 1024}, NdSbp::parse("S(0)"), NdSbp::parse("S(1)")},
      {"(S(0),P)->(B,S(1)) 2x2",
       mesh22,
       {4096, 1024},
       NdSbp::parse("(S(0), P(sum))"),
       NdSbp::parse("(B, S(1))")},
  };
  for (const Case& c : cases) {
    bench_hits(c, hits, rounds);
    bench_misses(c, misses);
  }
  return 0;
}
