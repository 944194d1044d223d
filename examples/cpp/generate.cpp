// Generation from C++: load a model saved for it (save_gpt.py --generation) and continue prompts,
// decoding them together with a KV cache and sampling as Python's Decoder does.
//   generate GENERATION_DIR [--temperature T] [--top-k K] [--top-p P] [--seed S]
//            [--max-new-tokens N] PROMPT...
// A prompt is text in the saved vocabulary, or token ids ("1,2,3") when none was saved. Prints
// each prompt's continuation on its own line, in the order given. Under the launcher, a model
// saved tensor parallel (save_gpt.py --tensor-parallel --generation) decodes on the ranks, each
// holding its shards of the weights and of the cache; rank 0 prints.
#include <oneflowlike/oneflowlike.h>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::vector<int64_t> ids_of(const std::string& text) {
  std::vector<int64_t> ids;
  std::stringstream in(text);
  for (std::string id; std::getline(in, id, ',');) ids.push_back(std::stoll(id));
  return ids;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " GENERATION_DIR [--temperature T] [--top-k K] "
              << "[--top-p P] [--seed S] [--max-new-tokens N] PROMPT...\n";
    return 2;
  }
  try {
    ofl::Sampling sampling;
    std::vector<std::string> texts;
    for (int i = 2; i < argc; ++i) {
      const std::string arg = argv[i];
      const bool flag = arg.rfind("--", 0) == 0 && i + 1 < argc;
      if (arg == "--temperature" && flag)
        sampling.temperature = std::stod(argv[++i]);
      else if (arg == "--top-k" && flag)
        sampling.top_k = std::stoll(argv[++i]);
      else if (arg == "--top-p" && flag)
        sampling.top_p = std::stod(argv[++i]);
      else if (arg == "--seed" && flag)
        sampling.seed = std::stoll(argv[++i]);
      else if (arg == "--max-new-tokens" && flag)
        sampling.max_new_tokens = std::stoll(argv[++i]);
      else
        texts.push_back(arg);
    }
    const char* world_size = std::getenv("WORLD_SIZE");
    const bool distributed = world_size && std::atoi(world_size) > 1;
    const int64_t n = int64_t(texts.size());
    ofl::Generator gen = distributed ? ofl::Generator::load(argv[1], ofl::init_distributed(), n)
                                     : ofl::Generator::load(argv[1], n);
    const bool prints = !distributed || std::atoi(std::getenv("RANK")) == 0;
    std::vector<std::vector<int64_t>> prompts;
    for (const std::string& t : texts)
      prompts.push_back(gen.has_vocabulary() ? gen.encode(t) : ids_of(t));
    for (const std::vector<int64_t>& made : gen.generate(prompts, {sampling})) {
      if (!prints) continue;
      if (gen.has_vocabulary()) {
        std::cout << gen.decode(made) << "\n";
      } else {
        for (int64_t t : made) std::cout << t << " ";
        std::cout << "\n";
      }
    }
  } catch (const std::exception& e) {  // ofl::Error, and a number std::stoll could not read
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
