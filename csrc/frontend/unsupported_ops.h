#pragma once

#include "ir/source_location.h"

#include <string>
#include <vector>

namespace popsim::frontend {

// One use of an op popsim cannot lower, where the user wrote it.
struct UnsupportedOp {
  std::string op;
  ir::SourceLocation location;
  std::string reason; // empty: the op has no lowering at all
  // The module it runs in ("features.1.0.attn"; empty at the top), named
  // where its source line is unknown (an op the tracer made itself, such as
  // aten::Int of a size).
  std::string module = {};
};

// The text of the UnsupportedOperationError for `uses` (not empty): the op
// names, then each op (with each distinct reason) once, in order of first
// use, with its number of uses and its distinct source lines (the first few,
// then how many more), and what to do.
std::string unsupportedOpsMessage(const std::vector<UnsupportedOp>& uses);

} // namespace popsim::frontend
