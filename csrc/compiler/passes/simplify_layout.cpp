// Layout simplification.
//
// Traced PyTorch code is full of view(), contiguous() and scalar arithmetic
// that does nothing at runtime. This pass:
// 1. replaces ops that return their input unchanged (a reshape to the input's
//    shape, an identity permute, a slice covering the whole dimension,
//    affine with scale 1 and shift 0, stop_gradient once autodiff has run)
//    by their input, and overwrite(x, v) by v;
// 2. folds reshape(reshape(x)) into one reshape of x;
// and leaves the dead nodes to dead code elimination. An op that reads a
// state is left alone: a state changes during the program (accumulators,
// counters, the loss scaling factor), so the op's output is a snapshot taken
// where the op runs, which its readers, perhaps on another IPU or after the
// state is written, must keep reading.

#include "compiler/passes.h"

#include <numeric>

namespace popsim::compiler {
namespace {

bool isState(const ir::Value* value) {
  return value != nullptr && value->role() == ir::ValueRole::State;
}

bool returnsInputUnchanged(const ir::Node& node) {
  const ir::Value* input = node.inputs().empty() ? nullptr : node.input(0);
  if (isState(input)) return false;
  switch (node.kind()) {
  case ir::OpKind::Reshape: return input->type() == node.output()->type();
  case ir::OpKind::Permute: {
    const auto& perm = node.attrs().getInts("perm");
    std::vector<int64_t> identity(perm.size());
    std::iota(identity.begin(), identity.end(), 0);
    return perm == identity;
  }
  case ir::OpKind::Slice: return input->type() == node.output()->type();
  case ir::OpKind::StopGradient:
  case ir::OpKind::NoDerivative: return true; // their work is done once gradients are built
  case ir::OpKind::Cast: return input->type() == node.output()->type();
  case ir::OpKind::Affine:
    return node.attrs().getFloat("scale") == 1.0 && node.attrs().getFloat("shift") == 0.0;
  default: return false;
  }
}

class SimplifyLayoutPass : public Pass {
public:
  std::string name() const override { return "simplify-layout"; }

  bool optional() const override { return true; }

  bool run(ir::Graph& graph, PassContext&) override {
    bool changed = false;
    std::vector<ir::Node*> order;
    for (const auto& node : graph.nodes()) {
      order.push_back(node.get());
    }
    for (ir::Node* node : order) {
      if (node->kind() == ir::OpKind::Overwrite && !isState(node->input(1))) {
        // its values are its second input's
        changed = changed || !node->output()->users().empty() || graph.holds(node->output());
        graph.replaceAllUsesWith(node->output(), node->input(1));
        continue;
      }
      if (returnsInputUnchanged(*node)) {
        changed = changed || !node->output()->users().empty() || graph.holds(node->output());
        graph.replaceAllUsesWith(node->output(), node->input(0));
        continue;
      }
      if (node->kind() == ir::OpKind::Reshape) {
        changed = foldReshapeChain(graph, *node) || changed;
      }
    }
    return changed;
  }

private:
  // reshape(reshape(x, a), b) -> reshape(x, b): the outer reshape reads x
  // directly, and the inner one dies if nothing else uses it.
  static bool foldReshapeChain(ir::Graph& graph, ir::Node& node) {
    ir::Node* inner = node.input(0)->producer();
    if (inner == nullptr || inner->kind() != ir::OpKind::Reshape) {
      return false;
    }
    ir::Value* source = inner->input(0);
    if (isState(source)) return false; // the inner reshape is a snapshot
    if (source->type() == node.output()->type()) {
      graph.replaceAllUsesWith(node.output(), source);
      return true;
    }
    // Same element count, so the reshape type-checks; the dtype is unchanged.
    graph.replaceInput(&node, 0, source);
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createSimplifyLayoutPass() { return std::make_unique<SimplifyLayoutPass>(); }

} // namespace popsim::compiler
