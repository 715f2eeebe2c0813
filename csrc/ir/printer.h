#pragma once

#include "ir/graph.h"

#include <string>

namespace popsim::ir {

struct PrintOptions {
  // Append "# file:line" to each node.
  bool locations = true;
  // Full paths in locations; otherwise file names only (stable for golden tests).
  bool fullPaths = false;
};

// Stable text form of a graph. Inputs print as %name, weights as @name,
// state as &name, constants as $cN and computed values as %N numbered in
// schedule order, so the text depends only on the graph's structure:
//
//   graph(%x: f32[2,4]) {
//     weights:
//       @fc.weight: f32[3,4]
//     %0: f32[2,3] = linear(%x, @fc.weight)  # model.py:7
//     return (%0)
//   }
std::string printGraph(const Graph& graph, const PrintOptions& options = {});

} // namespace popsim::ir
