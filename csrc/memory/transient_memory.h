#pragma once

#include "device/ipu_system.h"
#include "ir/graph.h"
#include "memory/memory_plan.h"
#include "memory/op_temporaries.h"

#include <cstdint>
#include <map>
#include <vector>

namespace popsim::memory {

// Each IPU's budget for op temporaries: its availableMemoryProportion (by
// IPU; memory::kDefaultAvailableMemoryProportion for the others) of its memory.
std::vector<uint64_t> temporaryBudgets(const device::IpuSystemConfig& system,
                                       const std::map<int64_t, double>& proportions);
// The bytes `proportion` of one IPU's memory gives a matmul's or convolution's temporaries.
uint64_t temporaryBudget(const device::IpuSystemConfig& system, double proportion);

// What the memory an op needs only while it runs adds to each IPU, beyond
// its activation arena.
struct TransientMemory {
  std::vector<uint64_t> temporaries; // matmul and convolution temporaries
  std::vector<uint64_t> streamedIn;  // off-chip tensors streamed in, on top of them
};

// An op's temporaries and the off-chip tensors it works on live only while
// it runs, so they first fill the activation arena's free space at that
// step (memory that is not always live is shared over time). What they need
// beyond the arena at their worst step is reported: temporaries first, then
// what streamed-in tensors add on top of them. Both vectors are per node.
TransientMemory planTransientMemory(const ir::Graph& graph, const MemoryPlan& plan, int64_t numIpus,
                                    const std::vector<memory::OpTemporaries>& temporaries,
                                    const std::vector<uint64_t>& streamedWorkingBytes);

} // namespace popsim::memory
