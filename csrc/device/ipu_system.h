#pragma once

#include "device/chip_spec.h"

#include <cstddef>
#include <cstdint>

namespace popsim::device {

// Buffers of each input and output stream on an IPU's IO tiles: one moves
// over the host link while the compute tiles copy the other.
constexpr size_t kIoTileBuffers = 2;

// The simulated machine a program is compiled for.
struct IpuSystemConfig {
  ChipVersion chip = ChipVersion::Mk2;
  int64_t numIpus = 1;
  // Memory of each IPU in bytes; 0 means the chip's full SRAM. Setting it
  // lower lets users size models for a fraction of an IPU (and tests show
  // out-of-memory errors without huge models).
  uint64_t memoryPerIpu = 0;
  // Tiles of each IPU set aside for host I/O (TensorLocations.numIOTiles):
  // inputs and outputs marked for overlap stream through them, and the
  // program computes on the others.
  int64_t ioTiles = 0;
  // Replicas whose host transfers one host thread makes. A process's
  // transfers are its stream callbacks, which Poplar runs on the process's
  // main thread unless its engine options give them worker threads
  // (streamCallbacks.multiThreadMode, default singleThread, and
  // numWorkerThreads, default 0). The replicas of a thread take turns on it,
  // so each replica's transfer of a micro-batch waits for all of theirs. Each
  // process of a distributed job (a PopRun instance) has threads of its own;
  // Graphcore's scaling guide recommends more instances for host I/O.
  int64_t replicasPerHostThread = 1;

  // The chip as the program computes on it: its compute tiles.
  ChipSpec spec() const {
    ChipSpec compute = chipSpec(chip);
    compute.tiles -= ioTiles;
    return compute;
  }
  const ChipSpec& chipFigures() const { return chipSpec(chip); }
  // Memory of the IO tiles, and of the compute tiles (the program's).
  uint64_t ioTileMemory() const {
    return static_cast<uint64_t>(ioTiles) * chipFigures().sramBytesPerTile;
  }
  uint64_t memoryCapacity() const {
    return (memoryPerIpu != 0 ? memoryPerIpu : chipFigures().memoryBytes()) - ioTileMemory();
  }
  // Throws InvalidOption naming the setting when a value is out of range.
  void validate() const;
};

} // namespace popsim::device
