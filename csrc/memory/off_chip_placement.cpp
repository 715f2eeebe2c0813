#include "memory/off_chip_placement.h"

namespace popsim::memory {

bool placedOffChip(const ir::Value& value, const TensorLocation& location) {
  return !location.onChip && value.type().numel() >= location.minElementsForOffChip;
}

std::set<const ir::Value*> offChipVariables(const ir::Graph& graph, const MemoryPlan& plan,
                                            const TensorLocation& weights,
                                            const TensorLocation& optimizerState,
                                            const TensorLocation& accumulators) {
  std::set<const ir::Value*> offChip;
  const auto place = [&](const ir::Value* value, const TensorLocation& location) {
    if (placedOffChip(*value, location) && plan.hasSlot(value)) {
      offChip.insert(plan.storageRoot(value));
    }
  };
  for (const ir::Value* weight : graph.weights()) {
    place(weight, weights);
  }
  for (const ir::Value* state : graph.states()) {
    if (state->stateKind() == ir::StateKind::Optimizer) place(state, optimizerState);
    if (state->stateKind() == ir::StateKind::Accumulator) place(state, accumulators);
  }
  return offChip;
}

} // namespace popsim::memory
