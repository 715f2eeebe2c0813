#include "memory/transient_memory.h"

#include <algorithm>

namespace popsim::memory {

std::vector<uint64_t> temporaryBudgets(const device::IpuSystemConfig& system,
                                       const std::map<int64_t, double>& proportions) {
  std::vector<uint64_t> budgets;
  for (int64_t ipu = 0; ipu < system.numIpus; ++ipu) {
    auto it = proportions.find(ipu);
    const double proportion =
        it != proportions.end() ? it->second : memory::kDefaultAvailableMemoryProportion;
    budgets.push_back(temporaryBudget(system, proportion));
  }
  return budgets;
}

uint64_t temporaryBudget(const device::IpuSystemConfig& system, double proportion) {
  return static_cast<uint64_t>(proportion * static_cast<double>(system.memoryCapacity()));
}

TransientMemory planTransientMemory(const ir::Graph& graph, const MemoryPlan& plan, int64_t numIpus,
                                    const std::vector<memory::OpTemporaries>& temporaries,
                                    const std::vector<uint64_t>& streamedWorkingBytes) {
  const int64_t steps = static_cast<int64_t>(graph.nodes().size());
  const size_t ipus = static_cast<size_t>(numIpus);
  std::vector<std::vector<size_t>> live(ipus);
  for (size_t ipu = 0; ipu < ipus; ++ipu) {
    live[ipu] = plan.liveActivationBytes(static_cast<int64_t>(ipu), steps);
  }
  std::vector<uint64_t> withTemporaries(ipus, 0);
  std::vector<uint64_t> withStreamed(ipus, 0);
  for (int64_t step = 0; step < steps; ++step) {
    const ir::Node& node = *graph.nodes()[static_cast<size_t>(step)];
    const size_t ipu = static_cast<size_t>(node.placement().ipu);
    const size_t index = static_cast<size_t>(step);
    const uint64_t inUse = live[ipu][index] + temporaries[index].bytes;
    withTemporaries[ipu] = std::max(withTemporaries[ipu], inUse);
    withStreamed[ipu] = std::max(withStreamed[ipu], inUse + streamedWorkingBytes[index]);
  }
  TransientMemory transient{std::vector<uint64_t>(ipus, 0), std::vector<uint64_t>(ipus, 0)};
  for (size_t ipu = 0; ipu < ipus; ++ipu) {
    const uint64_t arena =
        plan.ipus()[ipu].regionBytes[static_cast<size_t>(MemoryRegion::Activations)];
    const uint64_t beyondTemporaries = std::max(arena, withTemporaries[ipu]);
    transient.temporaries[ipu] = beyondTemporaries - arena;
    transient.streamedIn[ipu] = std::max(beyondTemporaries, withStreamed[ipu]) - beyondTemporaries;
  }
  return transient;
}

} // namespace popsim::memory
