#pragma once

#include "ir/graph.h"

#include <string>

namespace popsim::passes {

// A transformation of the IR graph in place. Passes keep the graph valid; the
// pass manager verifies it after each one.
class Pass {
public:
  virtual ~Pass() = default;
  virtual std::string name() const = 0;
  virtual void run(ir::Graph& graph) = 0;
};

} // namespace popsim::passes
