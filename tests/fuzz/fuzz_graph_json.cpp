// Fuzz target: the graph.json loader (the Python and the C++ API load through it). Variables are
// made from the shapes the file declares; a graph that loads is then run on zero inputs, so a
// file that lies about its graph and still loads shows up as a crash in the executor.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "graph/executor.h"
#include "graph/serialize.h"
#include "ops/creation.h"

namespace {

using namespace ofl::internal;

constexpr int64_t kMaxElements = int64_t(1) << 20;  // per tensor the fuzzer may make

bool small(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || d > kMaxElements) return false;
    n *= std::max<int64_t>(d, 1);
    if (n > kMaxElements) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const graph::Graph g = graph::from_json(
        text,
        [](const std::string&, const graph::Value& v) {
          return small(v.shape) ? zeros(v.shape, v.dtype) : Tensor();
        },
        "fuzz/graph.json");
    std::vector<Tensor> inputs;
    for (int id : g.inputs()) {
      const graph::Value& v = g.values()[size_t(id)];
      if (!small(v.shape)) return 0;
      inputs.push_back(zeros(v.shape, v.dtype));
    }
    graph::run(g, inputs);
  } catch (const Error&) {
  }
  return 0;
}
