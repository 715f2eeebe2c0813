// The gradient program (ProgramKind::Gradients), how tests compare popsim's
// gradients with autograd's: the graph's outputs become the loss's gradients
// of its float inputs and its trainable weights, in that order, zeros where
// the loss does not depend on them.

#include "common/check.h"
#include "compiler/passes.h"
#include "compiler/training/autodiff.h"

namespace popsim::compiler {
namespace {

bool makeGradientProgram(ir::Graph& graph, PassContext&) {
  POPSIM_ASSERT(graph.loss() != nullptr, "a gradient program needs a loss.");
  std::vector<ir::Value*> wrt;
  for (ir::Value* input : graph.inputs()) {
    if (ir::isFloat(input->type().dtype)) wrt.push_back(input);
  }
  for (ir::Value* weight : graph.weights()) {
    if (weight->trainable()) wrt.push_back(weight);
  }
  const auto grads = buildGradients(graph, graph.loss(), wrt);
  std::vector<ir::Value*> outputs;
  for (ir::Value* value : wrt) {
    auto grad = grads.find(value);
    if (grad != grads.end()) {
      outputs.push_back(grad->second);
    } else {
      std::vector<uint8_t> zeros(value->type().storageBytes(), 0);
      outputs.push_back(graph.addConstant(value->type(), std::move(zeros)));
    }
  }
  graph.setOutputs(outputs);
  return true;
}

} // namespace

std::unique_ptr<Pass> createGradientProgramPass() {
  return std::make_unique<FunctionPass>("gradient-program", makeGradientProgram);
}

} // namespace popsim::compiler
