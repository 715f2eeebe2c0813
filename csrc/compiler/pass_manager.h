#pragma once

#include "compiler/ir_dump.h"
#include "compiler/pass.h"

#include <memory>
#include <vector>

namespace popsim::compiler {

// Runs passes in order, verifying the graph after each so that a broken pass
// is reported by name instead of as a wrong result much later, and writing
// it to `dump` (when given and enabled) before the first pass of a dump and
// after each pass.
class PassManager {
public:
  explicit PassManager(IrDump* dump = nullptr) : dump_(dump) {}
  PassManager& add(std::unique_ptr<Pass> pass);
  void run(ir::Graph& graph) const;

private:
  std::vector<std::unique_ptr<Pass>> passes_;
  IrDump* dump_;
};

} // namespace popsim::compiler
