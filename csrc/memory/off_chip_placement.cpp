#include "memory/off_chip_placement.h"

namespace popsim::memory {

bool placedOffChip(const ir::Value& value, const TensorLocation& location) {
  return !location.onChip && value.type().numel() >= location.minElementsForOffChip;
}

namespace {

// Calls `visit(root, location)` for each variable the locations place off chip.
template <typename Visit>
void forEachOffChipVariable(const ir::Graph& graph, const MemoryPlan& plan,
                            const TensorLocation& weights, const TensorLocation& optimizerState,
                            const TensorLocation& accumulators, Visit visit) {
  const auto place = [&](const ir::Value* value, const TensorLocation& location) {
    if (placedOffChip(*value, location) && plan.hasSlot(value)) {
      visit(plan.storageRoot(value), location);
    }
  };
  for (const ir::Value* weight : graph.weights()) {
    place(weight, weights);
  }
  for (const ir::Value* state : graph.states()) {
    if (state->stateKind() == ir::StateKind::Optimizer) place(state, optimizerState);
    if (state->stateKind() == ir::StateKind::Accumulator) place(state, accumulators);
  }
}

} // namespace

std::set<const ir::Value*> offChipVariables(const ir::Graph& graph, const MemoryPlan& plan,
                                            const TensorLocation& weights,
                                            const TensorLocation& optimizerState,
                                            const TensorLocation& accumulators) {
  std::set<const ir::Value*> offChip;
  forEachOffChipVariable(
      graph, plan, weights, optimizerState, accumulators,
      [&](const ir::Value* root, const TensorLocation&) { offChip.insert(root); });
  return offChip;
}

IoTileRoutes ioTileRoutes(const ir::Graph& graph, const MemoryPlan& plan,
                          const TensorLocation& weights, const TensorLocation& optimizerState,
                          const TensorLocation& accumulators) {
  IoTileRoutes routes;
  forEachOffChipVariable(graph, plan, weights, optimizerState, accumulators,
                         [&](const ir::Value* root, const TensorLocation& location) {
                           if (location.ioTilesToLoad) routes.loads.insert(root);
                           if (location.ioTilesToStore) routes.stores.insert(root);
                         });
  return routes;
}

} // namespace popsim::memory
