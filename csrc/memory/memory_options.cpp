#include "memory/memory_options.h"

#include "common/check.h"

#include <utility>

namespace popsim::memory {

void MemoryOptions::validate(const device::IpuSystemConfig& system) const {
  POPSIM_ASSERT(prefetchDepth >= 0, "prefetchDepth ", prefetchDepth, ".");
  const std::pair<const char*, const TensorLocation*> locations[] = {
      {"setWeightLocation", &weights},
      {"setOptimizerLocation", &optimizerState},
      {"setAccumulatorLocation", &accumulators},
      {"setActivationLocation", &activations}};
  // TensorLocations checks the user's locations against numIOTiles.
  for (const auto& [setter, location] : locations) {
    POPSIM_ASSERT(system.ioTiles > 0 || location->onChip ||
                      !(location->ioTilesToLoad || location->ioTilesToStore),
                  setter, " streams through IO tiles, but there are none.");
  }
  for (const auto& [ipu, proportion] : availableMemoryProportion) {
    POPSIM_ASSERT(ipu >= 0 && ipu < system.numIpus && proportion > 0.0 && proportion <= 1.0,
                  "availableMemoryProportion ", proportion, " for IPU", ipu, " of ", system.numIpus,
                  ".");
  }
}

} // namespace popsim::memory
