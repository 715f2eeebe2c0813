#pragma once

#include "device/ipu_system.h"
#include "ir/graph.h"
#include "memory/memory_plan.h"
#include "popsim/memory_report.h"

#include <set>
#include <string>
#include <vector>

namespace popsim::memory {

// The public API's structs (include/popsim/memory_report.h): a category's
// bytes (always live or not) and one of the largest tensors.
using ::popsim::MemoryCategory;
using ::popsim::TensorMemory;

struct IpuMemoryReport {
  int64_t ipu = 0;
  uint64_t capacity = 0;
  std::vector<MemoryCategory> categories;
  // Off chip, in Streaming Memory: not counted against `capacity`.
  std::vector<MemoryCategory> streamingMemory;
  std::vector<TensorMemory> largestTensors; // at most kLargestTensors, largest first
  // What availableMemoryProportion lets one matmul or convolution use.
  uint64_t temporaryBudget = 0;
  // The IO tiles (TensorLocations.numIOTiles): the buffers of the inputs and
  // outputs that stream through them, and their memory; not in `capacity`.
  int64_t ioTiles = 0;
  uint64_t ioTileBytes = 0;
  uint64_t ioTileCapacity = 0;

  uint64_t total() const;
  uint64_t alwaysLive() const;
  uint64_t notAlwaysLive() const;
  uint64_t offChip() const;
  bool fits() const { return total() <= capacity && ioTileBytes <= ioTileCapacity; }
};

struct MemoryReport {
  std::string chip;
  std::vector<IpuMemoryReport> ipus;
};

constexpr size_t kLargestTensors = 5;

// Bytes of code an op needs on the IPU: one vertex type per distinct op
// signature and control code per op instance, on every tile. These are
// popsim's own rough figures, not Graphcore's.
constexpr uint64_t kVertexCodeBytesPerTile = 256;
constexpr uint64_t kControlCodeBytesPerTile = 32;

// What the runtime adds to the memory plan or moves out of it, in bytes per
// IPU (empty: none):
// - the pipeline's stash of activations kept for later backward passes, on
//   chip and, for activations placed off chip, in Streaming Memory;
// - the extra input buffers the host link prefetches into;
// - on the IO tiles, two buffers of each input and output streaming through
//   them (one in flight while the other is copied);
// - what matmul and convolution temporaries (as availableMemoryProportion
//   bounds them) need beyond the activation arena at their worst step, and
//   what off-chip tensors streamed in to one op add on top: both live only
//   while their op runs, so they use the arena's free space first;
// and the planned tensors (storage roots) kept in Streaming Memory instead of
// on chip, reported off chip under their region's category.
struct RuntimeBuffers {
  std::vector<uint64_t> stash;
  std::vector<uint64_t> stashOffChip;
  std::vector<uint64_t> prefetch;
  std::vector<uint64_t> ioTiles;
  std::vector<uint64_t> temporaries;
  std::vector<uint64_t> temporaryBudget;
  std::vector<uint64_t> streamedIn;
  std::set<const ir::Value*> offChip;
};

// Per-IPU memory of a planned program: the plan's regions, code, and the
// runtime's buffers.
MemoryReport buildMemoryReport(const ir::Graph& graph, const MemoryPlan& plan,
                               const device::IpuSystemConfig& system,
                               const RuntimeBuffers& buffers = {});

// Throws OutOfMemory for the first IPU whose program does not fit, naming the
// IPU, bytes needed and available, each category and the largest tensors.
void checkMemoryFits(const MemoryReport& report, const device::IpuSystemConfig& system);

// How a value is named in reports and errors.
std::string describeValue(const ir::Value& value);

} // namespace popsim::memory
