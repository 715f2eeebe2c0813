#pragma once

#include "ir/graph.h"
#include "memory/memory_plan.h"

#include <cstdint>
#include <set>

namespace popsim::memory {

// Where a kind of tensor lives (PopTorch's TensorLocationSettings): on chip,
// or in Streaming Memory, off chip, streamed in and out around its use.
struct TensorLocation {
  bool onChip = true;
  // Tensors with fewer elements stay on chip whatever `onChip` says.
  int64_t minElementsForOffChip = 0;
  // Off chip: streamed in (loaded) and out (stored) through the IPU's IO
  // tiles (TensorLocationSettings.useIOTilesToLoad / useIOTilesToStore),
  // beside the compute, instead of through its compute tiles.
  bool ioTilesToLoad = false;
  bool ioTilesToStore = false;
};

// Whether `location` keeps `value` off chip.
bool placedOffChip(const ir::Value& value, const TensorLocation& location);

// The storage roots of the variables the locations place off chip: weights
// (and buffers), optimizer state and gradient accumulators. (Activations
// are the pipeline stash's: the runtime places them.)
std::set<const ir::Value*> offChipVariables(const ir::Graph& graph, const MemoryPlan& plan,
                                            const TensorLocation& weights,
                                            const TensorLocation& optimizerState,
                                            const TensorLocation& accumulators);

// The off-chip storage roots whose location streams them through the IO
// tiles: loads (in) and stores (out).
struct IoTileRoutes {
  std::set<const ir::Value*> loads;
  std::set<const ir::Value*> stores;
};
IoTileRoutes ioTileRoutes(const ir::Graph& graph, const MemoryPlan& plan,
                          const TensorLocation& weights, const TensorLocation& optimizerState,
                          const TensorLocation& accumulators);

} // namespace popsim::memory
