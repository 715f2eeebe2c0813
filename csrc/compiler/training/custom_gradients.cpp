// Custom gradients' removal, the last step of building gradients.
//
// A torch.autograd.Function reaches the program as custom_gradient(X, Y, P,
// G), which passes its forward's outputs Y through, and a template: its
// backward's ops, traced on gradient_placeholder values P (ir/ops/
// custom_gradient.cpp). Once autodiff has copied the template wherever a
// gradient flows through it, removeCustomGradients
// 1. redirects the readers of each custom_gradient's outputs to Y, and
// 2. removes the custom_gradient node, its placeholders and every op that
//    reads a placeholder (directly or through such ops): none of them can
//    run, and nothing reads them any more.
// (An inference model's trace has neither op: without gradients to build,
// the Python side leaves a Function's forward ops alone.)

#include "compiler/training/custom_gradients.h"

#include "common/check.h"

#include <unordered_set>

namespace popsim::compiler {

void removeCustomGradients(ir::Graph& graph) {
  std::unordered_set<const ir::Node*> removed;
  std::unordered_set<const ir::Value*> fromPlaceholders;
  for (const auto& node : graph.nodes()) {
    bool reads = node->kind() == ir::OpKind::GradientPlaceholder;
    for (const ir::Value* input : node->inputs())
      reads = reads || fromPlaceholders.count(input) != 0;
    if (node->kind() == ir::OpKind::CustomGradient) {
      const auto n = static_cast<size_t>(node->attrs().getInt("inputs"));
      for (size_t j = 0; j < node->outputs().size(); ++j)
        graph.replaceAllUsesWith(node->output(j), node->input(n + j));
      removed.insert(node.get());
    } else if (reads) {
      removed.insert(node.get());
      for (const ir::Value* output : node->outputs())
        fromPlaceholders.insert(output);
    }
  }
  if (removed.empty()) return;
  const size_t count =
      graph.removeNodesIf([&](const ir::Node& node) { return removed.count(&node) != 0; });
  POPSIM_ASSERT(count == removed.size(), "removeCustomGradients removed ", count, " of ",
                removed.size(), " nodes: a template op is read outside its custom gradient.");
}

} // namespace popsim::compiler
