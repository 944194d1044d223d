// The public C++ API: the only header a program that runs (or plans) oneflowlike graphs includes.
//   ofl::Graph g = ofl::Graph::load("saved_graph");
//   std::vector<ofl::Tensor> out = g.forward({ofl::Tensor::from_vector<int64_t>(ids, {1, 8})});
// Link with the CMake target oneflowlike::oneflowlike (find_package(oneflowlike CONFIG), with
// CMAKE_PREFIX_PATH from `python -m oneflowlike --cmake-prefix-path`).
#pragma once
#include "oneflowlike/distributed.h"
#include "oneflowlike/generator.h"
#include "oneflowlike/graph.h"
#include "oneflowlike/planning.h"
#include "oneflowlike/tensor.h"
