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
  bool run(ir::Graph& graph, PassContext&) override {
    const size_t nodes = graph.removeNodesIf([](const ir::Node&) { return true; });
    return nodes + graph.removeUnusedLeaves() != 0;
  }
  bool optional() const override { return true; }
};

} // namespace

std::unique_ptr<Pass> createDeadCodeEliminationPass() {
  return std::make_unique<DeadCodeEliminationPass>();
}

} // namespace popsim::compiler
