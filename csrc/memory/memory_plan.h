#pragma once

#include "ir/graph.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace popsim::memory {

// Regions of one simulated IPU's memory. Weights, state (gradient
// accumulators, optimizer state, the random counter), constants and the input
// stream buffers are always live; activations share an arena by lifetime.
enum class MemoryRegion {
  Weights,
  Accumulators,
  OptimizerState,
  RandomState,
  Constants,
  InputStreams,
  Activations,
};
constexpr size_t kNumMemoryRegions = 7;
const char* memoryRegionName(MemoryRegion region);

// Program steps: node i of the schedule runs at step i. Inputs arrive before
// step 0 (step -1) and outputs are read after the last step (step = #nodes).
struct Lifetime {
  int64_t first = 0;
  int64_t last = 0;
  bool overlaps(const Lifetime& other) const { return first <= other.last && other.first <= last; }
};

// Where a value's bytes live. Views (ir::isViewOp: reshape, stop_gradient)
// share their input's slot, and in the simulated IPU's plan so do the casts
// it does not run (ir::isFreeOnIpu).
struct TensorSlot {
  int64_t ipu = 0;
  MemoryRegion region = MemoryRegion::Activations;
  size_t offset = 0;
  size_t bytes = 0;
  Lifetime lifetime;
};

struct IpuMemoryLayout {
  std::array<size_t, kNumMemoryRegions> regionBytes{};
  // Most activation bytes live at one step: a lower bound for the arena.
  size_t activationLivePeak = 0;
  int64_t activationPeakStep = 0;
  size_t total() const;
};

struct MemoryPlanOptions {
  size_t alignment = 64;
  int64_t numIpus = 1;
  // Lay out the host buffers that stand in for the IPUs' memory, where
  // float16 values take float32 carriers, instead of the IPUs' own bytes.
  bool hostStorage = false;
};

// The result of memory planning: a slot for every value of the graph and the
// size of each region on each IPU.
class MemoryPlan {
public:
  const TensorSlot& slot(const ir::Value* value) const;
  bool hasSlot(const ir::Value* value) const { return slots_.count(storageRoot(value)) != 0; }
  // The value whose storage `value` uses (itself unless it is a view).
  const ir::Value* storageRoot(const ir::Value* value) const;
  const std::vector<IpuMemoryLayout>& ipus() const { return ipus_; }
  // Bytes a storage root takes in its region: its own, aligned, outside the
  // activation arena (where buffers share space).
  size_t footprint(const ir::Value* root) const;
  // Values that own storage, in a deterministic order.
  const std::vector<const ir::Value*>& roots() const { return roots_; }
  // Activation bytes live on `ipu` at each step 0..steps-1: a buffer is live
  // from the step that writes it to its last reader.
  std::vector<size_t> liveActivationBytes(int64_t ipu, int64_t steps) const;

private:
  friend MemoryPlan planMemory(const ir::Graph&, const MemoryPlanOptions&);
  std::unordered_map<const ir::Value*, TensorSlot> slots_;
  std::unordered_map<const ir::Value*, const ir::Value*> roots_of_;
  std::vector<const ir::Value*> roots_;
  std::vector<IpuMemoryLayout> ipus_;
  size_t alignment_ = 1;
};

// Bytes `value` takes in a simulated IPU's memory: its type's, except that a
// float32 value of an op the IPU runs in float16 (ir::Placement::float16OnIpu)
// takes float16's.
size_t simulatedBytes(const ir::Value& value);

// Lifetimes from first definition to last use, then offsets by greedy
// best-fit in decreasing size order: buffers whose lifetimes overlap never
// share bytes; others may.
MemoryPlan planMemory(const ir::Graph& graph, const MemoryPlanOptions& options = {});

} // namespace popsim::memory
