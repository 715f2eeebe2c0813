#include "memory/stash_plan.h"

#include "common/check.h"

#include <algorithm>

namespace popsim::memory {

StashBytes planStash(const std::vector<StashedValue>& values,
                     const std::vector<std::vector<size_t>>& ipuTaskOrders, int64_t numIpus) {
  const size_t ipus = static_cast<size_t>(numIpus);
  StashBytes stash{std::vector<uint64_t>(ipus, 0), std::vector<uint64_t>(ipus, 0)};
  for (const StashedValue& value : values) {
    const size_t ipu = static_cast<size_t>(value.ipu);
    POPSIM_ASSERT(ipu < ipus && ipu < ipuTaskOrders.size(), "a stashed value on IPU", value.ipu,
                  " of ", numIpus, ".");
    int64_t held = 0;
    int64_t most = 0;
    for (size_t task : ipuTaskOrders[ipu]) {
      if (task == value.to) held -= 1;
      if (task == value.from) most = std::max(most, ++held);
    }
    (value.offChip ? stash.offChip : stash.onChip)[ipu] +=
        value.bytes * static_cast<uint64_t>(most);
  }
  return stash;
}

std::vector<uint64_t> prefetchBytes(const std::vector<uint64_t>& inputBytes,
                                    const std::vector<int64_t>& inputIpus, int64_t depth,
                                    int64_t numIpus) {
  std::vector<uint64_t> buffers(static_cast<size_t>(numIpus), 0);
  for (size_t i = 0; i < inputBytes.size(); ++i) {
    buffers[static_cast<size_t>(inputIpus[i])] += inputBytes[i] * static_cast<uint64_t>(depth);
  }
  return buffers;
}

} // namespace popsim::memory
