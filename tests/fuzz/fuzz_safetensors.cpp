// Fuzz target: the C++ safetensors reader (weights.safetensors, distributed checkpoint shards)
// on any file. A bad file must raise ofl's Error, never crash, read out of bounds or allocate
// what the file does not hold.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "core/error.h"
#include "core/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ofl::internal;
  static const std::string path = "/tmp/ofl_fuzz_safetensors." + std::to_string(::getpid());
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  try {
    volatile uint8_t sink = 0;
    for (const auto& [name, t] : safetensors::read(path)) {
      const auto* p = static_cast<const uint8_t*>(t.raw_data());
      const size_t n = size_t(t.numel()) * itemsize(t.dtype());
      for (size_t i = 0; i < n; i += 64) sink ^= p[i];  // every page of what was read is there
    }
  } catch (const Error&) {
  }
  return 0;
}
