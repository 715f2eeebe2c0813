#include "device/ipu_system.h"

#include "common/check.h"

namespace popsim::device {

void IpuSystemConfig::validate() const {
  POPSIM_CHECK_OPTION(numIpus >= 1 && numIpus <= 64, "Simulator.numIpus",
                      "the number of IPUs must be between 1 and 64, got ", numIpus, ".");
  const ChipSpec& figures = chipFigures();
  POPSIM_CHECK_OPTION(memoryPerIpu <= figures.memoryBytes(), "Simulator.memoryPerIpu",
                      "memory per IPU (", formatBytes(memoryPerIpu), ") exceeds the ", figures.name,
                      " SRAM of ", formatBytes(figures.memoryBytes()), ".");
  // TensorLocations.numIOTiles checks the user's value.
  POPSIM_ASSERT(ioTiles == 0 || (ioTiles >= 32 && ioTiles <= 192 && ioTiles % 2 == 0), "ioTiles ",
                ioTiles, ".");
  POPSIM_ASSERT(replicasPerHostThread >= 1, "replicasPerHostThread ", replicasPerHostThread, ".");
  const uint64_t memory = memoryPerIpu != 0 ? memoryPerIpu : figures.memoryBytes();
  POPSIM_CHECK_OPTION(
      ioTileMemory() < memory, "TensorLocations.numIOTiles", "TensorLocations.numIOTiles(", ioTiles,
      ") sets aside ", formatBytes(ioTileMemory()), " of IO tile memory but each IPU has ",
      formatBytes(memory), " (Simulator.memoryPerIpu). Use fewer IO tiles or more memory per IPU.");
}

} // namespace popsim::device
