#pragma once

// The memory plan of simulated IPUs, as sessions report it (Python's
// model.memoryReport()). The core's own report (csrc/memory) builds its
// categories and largest tensors from these same structs.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace popsim {

/// Bytes of one kind on one IPU ("weights", "activations", "code", ...).
/// Always-live memory (weights, state, constants, stream buffers, code) is
/// held for the whole program; the rest (activations, the pipeline stash,
/// temporaries) only while in use, which is how Graphcore's tools report
/// memory.
struct MemoryCategory {
  std::string name;
  uint64_t bytes = 0;
  bool alwaysLive = true;
};

/// One of the largest tensors of an IPU.
struct TensorMemory {
  std::string description; ///< "layer3.weight (weight)", "output of convolution at m.py:7"
  std::string type;        ///< "f32[256,320]"
  std::string category;
  uint64_t bytes = 0;
};

/// One simulated IPU's memory plan.
struct IpuMemory {
  int64_t ipu = 0;
  uint64_t capacity = 0;
  uint64_t total = 0; ///< what the program needs at its peak, all categories
  std::vector<MemoryCategory> categories;
  std::vector<TensorMemory> largestTensors; ///< largest first
  /// Tiles set aside for I/O (TensorLocations.numIOTiles): the bytes they hold
  /// and their own memory, which their buffers must fit too.
  uint64_t ioTileBytes = 0;
  uint64_t ioTileCapacity = 0;
  bool fits() const { return total <= capacity && ioTileBytes <= ioTileCapacity; }
};

/// The chip and each IPU's memory plan.
struct MemoryReport {
  std::string chip; ///< "Mk2 (GC200)"
  std::vector<IpuMemory> ipus;
};

/// One line per IPU (total against capacity), then its non-empty categories.
std::ostream& operator<<(std::ostream& out, const MemoryReport& report);

} // namespace popsim
