// popsim::custom_gradient and popsim::gradient_placeholder: a
// torch.autograd.Function in the model (python/popsim/frontend/
// custom_functions.py traces its forward and its backward; ir/ops/
// custom_gradient.cpp says what the two ops mean).

#include "common/check.h"
#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

namespace popsim::frontend::lowerings {
namespace {

// gradient_placeholder(output) -> where the output's gradient enters the backward
void lowerGradientPlaceholder(LoweringContext& ctx) {
  ctx.setOutput(0, ctx.emit(ir::OpKind::GradientPlaceholder, {ctx.tensor(0)}));
}

// custom_gradient(inputs, outputs, placeholders, gradients, name) -> outputs.
// Only a training model's trace has it: autodiff removes it.
void lowerCustomGradient(LoweringContext& ctx) {
  POPSIM_ASSERT(ctx.training(), "custom_gradient in an inference model's trace.");
  const std::vector<ir::Value*> inputs = ctx.tensorList(0);
  std::vector<ir::Value*> operands = inputs;
  for (size_t list = 1; list <= 3; ++list) {
    const std::vector<ir::Value*> values = ctx.tensorList(list);
    operands.insert(operands.end(), values.begin(), values.end());
  }
  ctx.setOutputList(0, ctx.emitMulti(ir::OpKind::CustomGradient, operands,
                                     {{"inputs", static_cast<int64_t>(inputs.size())},
                                      {"name", ctx.toString(4)}}));
}

} // namespace

void registerCustomGradients(LoweringRegistry& registry) {
  registry.add("popsim::gradient_placeholder", lowerGradientPlaceholder);
  registry.add("popsim::custom_gradient", lowerCustomGradient);
}

} // namespace popsim::frontend::lowerings
