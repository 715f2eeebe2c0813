// Gradient accumulation (CompilerOptions::gradientAccumulation > 1):
// 1. each gradient of the map gets an accumulator, a float32 state of its
//    parameter's shape (<param>/accumulator);
// 2. every micro-batch adds its gradient into it (an accumulate op at the
//    gradient's producer's placement), or with MeanReductionStrategy.Running
//    averages it in, counting the step's micro-batches in an int64 state
//    (<param>/accumulator_count);
// 3. the map's gradient becomes the accumulator: what the step reads. The
//    optimizer step clears it after the update.
// A weight used in several pipeline stages of one IPU (BERT's word embeddings,
// tied to its MLM decoder) gets one gradient contribution per stage, which
// autodiff sums in the last stage to run backward. Accumulating that sum would
// keep every earlier stage's contribution (a whole [vocabulary, hidden]
// tensor for BERT) in the stash until then, micro-batch after micro-batch;
// instead each contribution is accumulated in its own stage's task, as an IPU
// accumulates it where it is computed.

#include "common/check.h"
#include "compiler/passes.h"
#include "compiler/training/training_helpers.h"

#include <algorithm>

namespace popsim::compiler {
namespace {

using training::addNode;
using training::inPhase;
using training::placementOf;

// The terms of the Add tree autodiff built for `grad` (grad itself when it
// is no such sum); a sum counts only when nothing else reads it (the root is
// the gradient map's, and no output: an anchored gradient stays whole).
void addTerms(const ir::Graph& graph, ir::Value* grad, bool root, std::vector<ir::Value*>& terms) {
  const ir::Node* producer = grad->producer();
  const auto& outputs = graph.outputs();
  const bool onlyReadBySum =
      root ? grad->users().empty() &&
                 std::find(outputs.begin(), outputs.end(), grad) == outputs.end()
           : grad->users().size() == 1 && !graph.holds(grad);
  const bool innerSum = producer != nullptr && producer->kind() == ir::OpKind::Add &&
                        onlyReadBySum && producer->input(0)->type() == grad->type() &&
                        producer->input(1)->type() == grad->type();
  if (!innerSum) {
    terms.push_back(grad);
    return;
  }
  addTerms(graph, producer->input(0), false, terms);
  addTerms(graph, producer->input(1), false, terms);
}

// The values to accumulate for `grad`: its terms when they come from several
// stages of one IPU, else grad itself.
std::vector<ir::Value*> contributionsOf(const ir::Graph& graph, ir::Value* grad) {
  std::vector<ir::Value*> terms;
  addTerms(graph, grad, true, terms);
  bool severalStages = false;
  for (const ir::Value* term : terms) {
    if (term->producer() == nullptr ||
        term->producer()->placement().ipu != grad->producer()->placement().ipu) {
      return {grad};
    }
    severalStages =
        severalStages || term->producer()->placement().stage != grad->producer()->placement().stage;
  }
  if (!severalStages) return {grad};
  return terms;
}

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
    // Each addition runs where its value is computed (a gradient with no
    // producer, a constant, where the parameter's backward pass runs).
    const auto placementFor = [&](const ir::Value* value) {
      return value->producer() != nullptr ? value->producer()->placement()
                                          : inPhase(placementOf(param), ir::Phase::Backward);
    };
    if (config.runningMean) {
      // A running mean counts its values, one per micro-batch: the sum stays whole.
      ir::Value* count = graph.addState(ir::parameterStateName(param->name(), "accumulator_count"),
                                        {ir::DType::Int64, {}}, ir::StateKind::Accumulator);
      addNode(graph, ir::OpKind::Accumulate, {accumulator, grad, count}, {{"every", accumulation}},
              ir::Phase::Backward, placementFor(grad));
    } else {
      for (ir::Value* contribution : contributionsOf(graph, grad)) {
        addNode(graph, ir::OpKind::Accumulate, {accumulator, contribution},
                {{"every", accumulation}}, ir::Phase::Backward, placementFor(contribution));
      }
    }
    graph.setGradient(param, accumulator);
  }
  return !gradients.empty();
}

} // namespace

std::unique_ptr<Pass> createGradientAccumulationPass() {
  return std::make_unique<FunctionPass>("gradient-accumulation", accumulateGradients);
}

} // namespace popsim::compiler
