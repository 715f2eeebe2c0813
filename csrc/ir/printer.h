#pragma once

#include "ir/graph.h"

#include <string>

namespace popsim::ir {

struct PrintOptions {
  // Append "# file:line" to each node.
  bool locations = true;
  // Full paths in locations; otherwise file names only (stable for golden tests).
  bool fullPaths = false;
  // Everything parseGraph (ir/parser.h) needs to rebuild the graph: every
  // constant's values exactly (not "<N values>"), numbers in their shortest
  // exact form, quoted names where they are not identifiers, the blocks,
  // each op's own availableMemoryProportion and whether the IPU runs it in
  // float16 (Placement::float16OnIpu), the input updates among the
  // outputs and, with locations, each op's function and name scope.
  bool full = false;
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
// With PrintOptions::full, also:
//
//   graph(%x: f32[2,4]) {
//     blocks:
//       "A" ipu 0  # model.py:6 in forward
//     ...
//     %1: f32[2,3] = matmul(%x, %0) [stage 0, ipu 0, block "A", amp 0.25]  # model.py:7 in forward
//     scope "enc" return (%1, %2 -> %x)
//   }
//
// where "%2 -> %x" is an input update: the value written back into input %x.
std::string printGraph(const Graph& graph, const PrintOptions& options = {});

// A number as `full` printing writes it: the shortest text that reads back
// as the same double (or float), with "inf", "-inf" and "nan".
std::string exactNumber(double value);
std::string exactNumber(float value);

} // namespace popsim::ir
