// Gradient accumulation (CompilerOptions::gradientAccumulation > 1):
// 1. each gradient of the map gets an accumulator, a float32 state of its
//    parameter's shape (<param>/accumulator);
// 2. every micro-batch adds its gradient into it (an accumulate op at the
//    gradient's producer's placement), or with MeanReductionStrategy.Running
//    averages it in, counting the step's micro-batches in an int64 state
//    (<param>/accumulator_count);
// 3. the map's gradient becomes the accumulator: what the step reads. The
//    optimizer step clears it after the update.

#include "common/check.h"
#include "compiler/passes.h"
#include "compiler/training/training_helpers.h"

namespace popsim::compiler {
namespace {

using training::addNode;
using training::inPhase;
using training::placementOf;

bool accumulateGradients(ir::Graph& graph, PassContext& context) {
  const int64_t accumulation = context.options().gradientAccumulation;
  POPSIM_ASSERT(accumulation >= 1, "gradientAccumulation ", accumulation, ".");
  if (accumulation == 1) return false; // the step reads the gradients directly
  const TrainingConfig& config = context.training();
  const std::vector<ir::Graph::Gradient> gradients = graph.gradients();
  for (const auto& [param, grad] : gradients) {
    const ir::TensorType type = config.halfAccumulators
                                    ? ir::TensorType{ir::DType::Float16, grad->type().shape}
                                    : training::float32Like(grad->type());
    ir::Value* accumulator = graph.addState(ir::parameterStateName(param->name(), "accumulator"),
                                            type, ir::StateKind::Accumulator);
    std::vector<ir::Value*> inputs = {accumulator, grad};
    if (config.runningMean) {
      inputs.push_back(graph.addState(ir::parameterStateName(param->name(), "accumulator_count"),
                                      {ir::DType::Int64, {}}, ir::StateKind::Accumulator));
    }
    addNode(graph, ir::OpKind::Accumulate, inputs, {{"every", accumulation}}, ir::Phase::Backward,
            grad->producer() != nullptr ? grad->producer()->placement()
                                        : inPhase(placementOf(param), ir::Phase::Backward));
    graph.setGradient(param, accumulator);
  }
  return !gradients.empty();
}

} // namespace

std::unique_ptr<Pass> createGradientAccumulationPass() {
  return std::make_unique<FunctionPass>("gradient-accumulation", accumulateGradients);
}

} // namespace popsim::compiler
