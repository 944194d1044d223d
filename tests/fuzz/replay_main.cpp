// The ordinary test build's driver of a fuzz target (CI, through ctest): every file of the seed
// corpus, then deterministic mutations of each (bytes flipped, inserted, deleted, cut, repeated),
// through LLVMFuzzerTestOneInput. A crash, a sanitizer report or an uncaught exception fails the
// test. Coverage-guided fuzzing is scripts/run_fuzz.sh (clang, libFuzzer, ASan and UBSan).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Bytes = std::vector<uint8_t>;

Bytes mutated(const Bytes& seed, std::mt19937_64& rng) {
  Bytes b = seed;
  const int edits = 1 + int(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    const size_t at = b.empty() ? 0 : rng() % b.size();
    switch (rng() % 6) {
      case 0:  // flip a bit
        if (!b.empty()) b[at] ^= uint8_t(1u << (rng() % 8));
        break;
      case 1:  // an interesting byte
        if (!b.empty())
          b[at] = std::vector<uint8_t>{0, 1, 0x7f, 0x80, 0xff, '[', '{', '"', '-'}[rng() % 9];
        break;
      case 2:  // insert random bytes
        b.insert(b.begin() + long(at), 1 + rng() % 8, uint8_t(rng()));
        break;
      case 3:  // delete a run
        if (!b.empty())
          b.erase(b.begin() + long(at), b.begin() + long(std::min(b.size(), at + 1 + rng() % 16)));
        break;
      case 4:  // cut short
        b.resize(at);
        break;
      default:  // repeat a run
        if (!b.empty()) {
          const size_t n = std::min<size_t>(b.size() - at, 1 + rng() % 32);
          Bytes run(b.begin() + long(at), b.begin() + long(at + n));
          b.insert(b.begin() + long(at), run.begin(), run.end());
        }
    }
  }
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR [MUTATIONS_PER_SEED]\n", argv[0]);
    return 2;
  }
  const int per_seed = argc > 2 ? std::stoi(argv[2]) : 300;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(argv[1]))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "%s: no seeds in %s\n", argv[0], argv[1]);
    return 1;
  }
  std::mt19937_64 rng(20261127);
  size_t runs = 0;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    const Bytes seed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(seed.data(), seed.size());
    ++runs;
    for (int i = 0; i < per_seed; ++i, ++runs) {
      const Bytes b = mutated(seed, rng);
      LLVMFuzzerTestOneInput(b.data(), b.size());
    }
  }
  std::printf("%zu inputs from %zu seeds: no crash\n", runs, files.size());
  return 0;
}
