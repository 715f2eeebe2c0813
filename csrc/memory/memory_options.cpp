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
  for (const auto& [setter, location] : locations) {
    POPSIM_CHECK(system.ioTiles > 0 || location->onChip ||
                     !(location->ioTilesToLoad || location->ioTilesToStore),
                 ErrorKind::InvalidOption, "TensorLocations.", setter, ": useIOTilesTo",
                 location->ioTilesToLoad ? "Load" : "Store",
                 "(True) streams the tensors through IO tiles, but none are set aside. Use "
                 "Options.TensorLocations.numIOTiles(n) (32 to 192), or turn it off.");
  }
  for (const auto& [ipu, proportion] : availableMemoryProportion) {
    POPSIM_ASSERT(ipu >= 0 && ipu < system.numIpus && proportion > 0.0 && proportion <= 1.0,
                  "availableMemoryProportion ", proportion, " for IPU", ipu, " of ", system.numIpus,
                  ".");
  }
}

} // namespace popsim::memory
