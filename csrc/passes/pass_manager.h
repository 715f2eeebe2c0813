#pragma once

#include "passes/pass.h"

#include <memory>
#include <vector>

namespace popsim::passes {

// Runs passes in order, verifying the graph after each so that a broken pass
// is reported by name instead of as a wrong result much later.
class PassManager {
public:
  PassManager& add(std::unique_ptr<Pass> pass);
  void run(ir::Graph& graph) const;

private:
  std::vector<std::unique_ptr<Pass>> passes_;
};

} // namespace popsim::passes
