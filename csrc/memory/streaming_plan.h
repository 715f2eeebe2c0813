#pragma once

#include "ir/graph.h"
#include "memory/memory_plan.h"
#include "memory/off_chip_placement.h"

#include <cstdint>
#include <set>
#include <vector>

namespace popsim::memory {

// The Streaming Memory traffic of one op, as PopART schedules remote loads
// and stores: the off-chip variables it reads stream in just before it runs,
// those it writes stream out just after, so only one op's share is on chip
// at a time.
struct StreamedBytes {
  uint64_t in = 0;      // read (written ones included: they are read first)
  uint64_t out = 0;     // written
  uint64_t working = 0; // on chip while the op runs: what it reads or writes
  // The parts of `in` and `out` that go through the IO tiles.
  uint64_t ioTileIn = 0;
  uint64_t ioTileOut = 0;
};

// Per node, in graph order, for the storage roots kept off chip (`routes`:
// those loaded or stored through the IO tiles).
std::vector<StreamedBytes> streamedBytesPerNode(const ir::Graph& graph, const MemoryPlan& plan,
                                                const std::set<const ir::Value*>& offChip,
                                                const IoTileRoutes& routes = {});

} // namespace popsim::memory
