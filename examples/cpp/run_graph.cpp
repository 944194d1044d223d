// The C++ API in a few lines: load a graph saved from Python and run it on token ids.
//   run_graph GRAPH_DIR ID...    (as many ids as the graph's sequence length, one row)
// Prints the graph, then the most likely next token at each position.
#include <oneflowlike/oneflowlike.h>
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " GRAPH_DIR ID...\n";
    return 2;
  }
  try {
    const ofl::Graph graph = ofl::Graph::load(argv[1]);
    std::cout << graph.str() << "\n";
    std::vector<int64_t> ids;
    for (int i = 2; i < argc; ++i) ids.push_back(std::atoll(argv[i]));
    const int64_t n = int64_t(ids.size());
    std::vector<ofl::Tensor> out = graph.forward({ofl::Tensor::from_vector(ids, {1, n})});
    const std::vector<int64_t> shape = out[0].shape();  // (1, n, vocab)
    const std::vector<float> logits = out[0].to_vector<float>();
    std::cout << "next tokens:";
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
