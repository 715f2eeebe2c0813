// The debugging and memory-trading markers users put in their models:
// popsim::print_tensor (popsim.ipu_print_tensor), which prints its input each
// time it runs and passes it through; popsim::recomputation_checkpoint
// (popsim.recomputationCheckpoint), a value recomputation stashes; and
// popsim::set_available_memory (popsim.set_available_memory), the temporary
// memory budget of the matmul or convolution that made a tensor; and
// popsim::value_guard, the check that a Python value the trace fixed is still
// what the data gives (frontend/value_guards.py).

#include "common/logging.h"
#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"
#include "ir/op_schema.h"
#include "ir/partials.h"

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

// value_guard(result, value, min, max, what, file, line, function) -> result:
// checks at run time that every element of value (a bool, an integer or a
// float the trace read as a Python value) is in [min, max], and passes result
// on (a returned tensor, so that the check stays in the program). Its errors
// name the line that read the value.
void lowerValueGuard(LoweringContext& ctx) {
  if (!ctx.toString(5).empty()) ctx.placeAt(ctx.toString(5), ctx.toInt(6), ctx.toString(7));
  ir::Value* value = ctx.tensor(1);
  if (value->type().dtype == ir::DType::Bool) value = castTo(ctx, value, ir::DType::Int32);
  ctx.setOutput(
      0, ctx.emit(ir::OpKind::CheckRange, {value, ctx.tensor(0)},
                  {{"min", ctx.toDouble(2)}, {"max", ctx.toDouble(3)}, {"what", ctx.toString(4)}}));
}

void lowerRecomputationCheckpoint(LoweringContext& ctx) {
  ctx.setOutput(0, ctx.emit(ir::OpKind::RecomputationCheckpoint, {ctx.tensor(0)}));
}

// The op a marker's setting goes to: the one that computed x, looking
// through views such as a reshape (null for a model input or constant).
ir::Node* markedOp(ir::Value* x) {
  ir::Node* producer = x->producer();
  while (producer != nullptr && ir::isViewOp(producer->kind()) && !producer->inputs().empty()) {
    producer = producer->input(0)->producer();
  }
  return producer;
}

std::string describeMarked(const ir::Node* op) {
  return op != nullptr ? op->describe() : std::string("a model input or constant");
}

// set_available_memory(x, proportion) -> x: the proportion goes to the op
// that computed x (through views such as a reshape), as PopTorch sets it on
// the producing op. popsim plans temporaries for matmuls and convolutions
// only; for other ops the hint has no effect, which is said once.
void lowerSetAvailableMemory(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  ir::Node* producer = markedOp(x);
  const bool planned = producer != nullptr && (producer->kind() == ir::OpKind::Linear ||
                                               producer->kind() == ir::OpKind::MatMul ||
                                               producer->kind() == ir::OpKind::Convolution);
  if (planned) {
    producer->setAvailableMemoryProportion(ctx.toDouble(1));
  } else {
    POPSIM_LOG(Warn) << "set_available_memory has no effect on " << describeMarked(producer)
                     << ": popsim bounds the temporary memory of matmuls and convolutions only.";
  }
  ctx.setOutput(0, x);
}

// partials_type(x, half) -> x: popsim.MultiConv's partialsTypes for the
// convolution that computed x (through views), which sets the convolution's
// and its gradients' half_partials. MultiConv marks only the outputs of the
// convolutions its block runs.
void lowerPartialsType(LoweringContext& ctx) {
  ir::Value* x = ctx.tensor(0);
  ir::Node* producer = markedOp(x);
  if (producer != nullptr && producer->kind() == ir::OpKind::Convolution) {
    producer->setOptionalAttribute(std::string(ir::kHalfPartials), ctx.toBool(1));
  } else {
    POPSIM_LOG(Warn) << "MultiConv's partialsTypes has no effect on " << describeMarked(producer)
                     << ": it sets the partials of convolutions.";
  }
  ctx.setOutput(0, x);
}

} // namespace

void registerMarkers(LoweringRegistry& registry) {
  registry.add("popsim::set_available_memory", lowerSetAvailableMemory);
  registry.add("popsim::partials_type", lowerPartialsType);
  registry.add("popsim::print_tensor", lowerPrintTensor);
  registry.add("popsim::recomputation_checkpoint", lowerRecomputationCheckpoint);
  registry.add("popsim::value_guard", lowerValueGuard);
}

} // namespace popsim::frontend::lowerings
