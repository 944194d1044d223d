// Counter-based random numbers (Philox4x32-10): element i of a draw depends only on
// (seed, offset + i), so a tensor's values do not depend on how it is laid out or split.
#pragma once
#include <array>
#include <cstdint>
#include <mutex>

namespace ofl::internal {

std::array<uint32_t, 4> philox4x32(uint64_t counter, uint64_t seed);

// Uniform float in [0, 1) and a standard normal, from the counter for one element.
inline double philox_uniform(uint64_t counter, uint64_t seed) {
  auto r = philox4x32(counter, seed);
  uint64_t bits = (static_cast<uint64_t>(r[0]) << 21) ^ r[1];  // 53 random bits
  return static_cast<double>(bits & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}
double philox_normal(uint64_t counter, uint64_t seed);

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}
  void manual_seed(uint64_t seed) {
    std::lock_guard<std::mutex> lock(mu_);
    seed_ = seed;
    offset_ = 0;
  }
  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }
  void set_offset(uint64_t o) { offset_ = o; }
  // Reserves n counters; returns the first one.
  uint64_t advance(uint64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t start = offset_;
    offset_ += n;
    return start;
  }

 private:
  std::mutex mu_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

// The generator used when an op is given none (flow.manual_seed seeds it).
Generator& default_generator();

}  // namespace ofl::internal
