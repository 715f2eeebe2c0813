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
//    run, and nothing reads them any more. An op outside the template that
//    reads a template value (backward read a Python value from a gradient,
//    which the trace fixed) is a CompilationError naming the Function.
// (An inference model's trace has neither op: without gradients to build,
// the Python side leaves a Function's forward ops alone.)

#include "compiler/training/custom_gradients.h"

#include "common/check.h"
#include "common/strings.h"

#include <unordered_map>
#include <unordered_set>

namespace popsim::compiler {

namespace {

// Where the template turned a gradient into a Python value: a value guard
// names that line itself (its lowering places it at the read); otherwise the
// template op that `escaping` (which passes a template value out of the
// template) reads, through the ops the trace added at its own line.
const ir::Node& readSite(const ir::Node& escaping,
                         const std::unordered_set<const ir::Node*>& removed) {
  if (escaping.kind() == ir::OpKind::CheckRange && escaping.location().known()) return escaping;
  const ir::Node* site = &escaping;
  for (;;) {
    const ir::Node* next = nullptr;
    for (const ir::Value* input : site->inputs()) {
      const ir::Node* producer = input->producer();
      if (producer != nullptr && removed.count(producer) != 0) next = producer;
    }
    if (next == nullptr) return *site;
    if (next->location().str() != escaping.location().str()) return *next;
    site = next;
  }
}

// A template value leaves the template through `escaping`: backward turned a
// gradient into a Python value (a branch on it, int(), item()), which the
// trace fixed at what the gradient's stand-in gave.
[[noreturn]] void refuseValueRead(const ir::Node& escaping, const ir::Node& placeholder,
                                  const std::unordered_set<const ir::Node*>& removed) {
  std::string function = "a torch.autograd.Function";
  for (const ir::Node* user : placeholder.output()->users()) {
    if (user->kind() == ir::OpKind::CustomGradient) {
      function = "the torch.autograd.Function " + user->attrs().getString("name");
    }
  }
  const ir::Node& site = readSite(escaping, removed);
  throwError(ErrorKind::Compilation,
             strCat("The backward of ", function, " reads a Python value from a gradient",
                    site.location().known() ? " at " + site.location().str() : std::string(),
                    " (an if on it, int(), item()). popsim traces backward once, on stand-ins "
                    "for the gradients, so that value would stay what the stand-in gave: "
                    "compute it with tensor ops instead (torch.where(grad.sum() > 0, 2 * grad, "
                    "-grad) for an if)."));
}

} // namespace

void removeCustomGradients(ir::Graph& graph) {
  std::unordered_set<const ir::Node*> removed;
  // Each template value's placeholder, for the error that names its Function.
  std::unordered_map<const ir::Value*, const ir::Node*> placeholderOf;
  for (const auto& node : graph.nodes()) {
    const ir::Node* placeholder =
        node->kind() == ir::OpKind::GradientPlaceholder ? node.get() : nullptr;
    for (const ir::Value* input : node->inputs()) {
      auto found = placeholderOf.find(input);
      if (found != placeholderOf.end()) placeholder = found->second;
    }
    if (node->kind() == ir::OpKind::CustomGradient) {
      const auto n = static_cast<size_t>(node->attrs().getInt("inputs"));
      for (size_t j = 0; j < node->outputs().size(); ++j)
        graph.replaceAllUsesWith(node->output(j), node->input(n + j));
      removed.insert(node.get());
    } else if (placeholder != nullptr) {
      removed.insert(node.get());
      for (const ir::Value* output : node->outputs())
        placeholderOf[output] = placeholder;
    }
  }
  if (removed.empty()) return;
  for (const auto& [value, placeholder] : placeholderOf) {
    bool escapes = graph.holds(value);
    for (const ir::Node* user : value->users())
      escapes = escapes || removed.count(user) == 0;
    if (escapes) refuseValueRead(*value->producer(), *placeholder, removed);
  }
  const size_t count =
      graph.removeNodesIf([&](const ir::Node& node) { return removed.count(&node) != 0; });
  POPSIM_ASSERT(count == removed.size(), "removeCustomGradients removed ", count, " of ",
                removed.size(), " nodes.");
}

} // namespace popsim::compiler
