// The C++ API in a few lines: load a graph saved from Python and run it on token ids.
//   run_graph GRAPH_DIR ID...    (as many ids as the graph's sequence length, one row)
// Prints the graph, then the most likely next token at each position. Under the launcher
// (python -m oneflowlike.distributed.launch --nproc_per_node 2 --no_python run_graph ...), a
// graph saved from a tensor-parallel model runs on the ranks, each holding its shards.
#include <oneflowlike/oneflowlike.h>
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " GRAPH_DIR ID...\n";
    return 2;
  }
  try {
    const char* world_size = std::getenv("WORLD_SIZE");
    const bool distributed = world_size && std::atoi(world_size) > 1;
    const ofl::Graph graph = distributed ? ofl::Graph::load(argv[1], ofl::init_distributed())
                                         : ofl::Graph::load(argv[1]);
    const std::string rank = distributed ? std::string("rank ") + std::getenv("RANK") + ": " : "";
    std::cout << rank << graph.str() << "\n";
    std::vector<int64_t> ids;
    for (int i = 2; i < argc; ++i) ids.push_back(std::atoll(argv[i]));
    const int64_t n = int64_t(ids.size());
    std::vector<ofl::Tensor> out = graph.forward({ofl::Tensor::from_vector(ids, {1, n})});
    const std::vector<int64_t> shape = out[0].shape();  // (1, n, vocab)
    const std::vector<float> logits = out[0].to_vector<float>();
    std::cout << rank << "next tokens:";
    for (int64_t t = 0; t < n; ++t) {
      auto row = logits.begin() + t * shape[2];
      std::cout << " " << std::max_element(row, row + shape[2]) - row;
    }
    std::cout << "\n";
  } catch (const ofl::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
