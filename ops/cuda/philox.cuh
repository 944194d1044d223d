// core/random.cpp's Philox draws on the device: the same counters give the same bits, uniforms
// and normals as on the host.
#pragma once
#include <cstdint>

namespace ofl::internal::cuda {

// core/random.cpp's philox4x32, on the device.
__device__ inline void philox(uint64_t counter, uint64_t seed, uint32_t (&out)[4]) {
  uint32_t c0 = uint32_t(counter), c1 = uint32_t(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(kM0) * c0, p1 = uint64_t(kM1) * c2;
    const uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0, n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    c1 = uint32_t(p1);
    c3 = uint32_t(p0);
    c0 = n0;
    c2 = n2;
    k0 += kW0;
    k1 += kW1;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

__device__ inline double uniform(uint64_t counter, uint64_t seed) {
  uint32_t r[4];
  philox(counter, seed, r);
  const uint64_t bits = (uint64_t(r[0]) << 21) ^ r[1];
  return double(bits & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}

__device__ inline double normal(uint64_t counter, uint64_t seed) {
  uint32_t r[4];
  philox(counter, seed, r);
  const double u1 = (double(r[0]) + 1.0) * (1.0 / 4294967296.0);
  const double u2 = double(r[1]) * (1.0 / 4294967296.0);
  return ::sqrt(-2.0 * ::log(u1)) * ::cos(2.0 * 3.14159265358979323846 * u2);
}

}  // namespace ofl::internal::cuda
