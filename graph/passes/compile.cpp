#include <cstdlib>
#include <iostream>

#include "graph/passes/passes.h"

namespace ofl::graph {

namespace {

bool printing() {
  const char* env = std::getenv("OFL_GRAPH_PRINT");
  return env && *env && std::string(env) != "0";
}

}  // namespace

Graph compile(Graph g) {
  const bool print = printing();
  if (print) std::cerr << "[graph] traced:\n" << g.str() << "\n";
  struct Pass {
    const char* name;
    Graph (*run)(const Graph&);
  };
  for (const Pass& pass : {Pass{"dead_code", dead_code}}) {
    g = pass.run(g);
    if (print) std::cerr << "[graph] after " << pass.name << ":\n" << g.str() << "\n";
  }
  return g;
}

}  // namespace ofl::graph
