// The debugging and memory-trading markers users put in their models:
// popsim::print_tensor (popsim.ipu_print_tensor), which prints its input each
// time it runs and passes it through, and popsim::recomputation_checkpoint
// (popsim.recomputationCheckpoint), a value recomputation stashes.

#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

namespace popsim::frontend::lowerings {
namespace {

// print_tensor(x, title, print_gradient, summarise_threshold, edge_items,
// max_line_width, digits, float_format, separator, open_bracket, close_bracket)
void lowerPrintTensor(LoweringContext& ctx) {
  ctx.setOutput(0, ctx.emit(ir::OpKind::PrintTensor, {ctx.tensor(0)},
                            {{"title", ctx.toString(1)},
                             {"print_gradient", ctx.toBool(2)},
                             {"summarise_threshold", ctx.toInt(3)},
                             {"edge_items", ctx.toInt(4)},
                             {"max_line_width", ctx.toInt(5)},
                             {"digits", ctx.toInt(6)},
                             {"float_format", ctx.toString(7)},
                             {"separator", ctx.toString(8)},
                             {"open_bracket", ctx.toString(9)},
                             {"close_bracket", ctx.toString(10)}}));
}

void lowerRecomputationCheckpoint(LoweringContext& ctx) {
  ctx.setOutput(0, ctx.emit(ir::OpKind::RecomputationCheckpoint, {ctx.tensor(0)}));
}

} // namespace

void registerDebugging(LoweringRegistry& registry) {
  registry.add("popsim::print_tensor", lowerPrintTensor);
  registry.add("popsim::recomputation_checkpoint", lowerRecomputationCheckpoint);
}

} // namespace popsim::frontend::lowerings
