#pragma once

#include "ir/graph.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace popsim::memory {

// A value that a later task on the same IPU reads after other tasks have run
// in between: the pipeline keeps it (the stash) from the end of task `from`
// to the start of task `to`, one message per micro-batch in flight.
struct StashedValue {
  uint64_t bytes = 0;
  size_t from = 0;
  size_t to = 0;
  int64_t ipu = 0;
  bool offChip = false; // kept in Streaming Memory (TensorLocations' activations)
};

// Per IPU, the bytes the stash holds at most, on chip and off chip.
struct StashBytes {
  std::vector<uint64_t> onChip;
  std::vector<uint64_t> offChip;
};

// Walks each IPU's task order for one step (`ipuTaskOrders[ipu]`: the task
// of each run, in order): a value's messages held at once are those its
// `from` runs pushed and its `to` runs have not popped yet.
StashBytes planStash(const std::vector<StashedValue>& values,
                     const std::vector<std::vector<size_t>>& ipuTaskOrders, int64_t numIpus);

// Per IPU, the extra input buffers prefetching needs: each input's bytes
// times the depth, on the IPU whose host link streams it.
std::vector<uint64_t> prefetchBytes(const std::vector<uint64_t>& inputBytes,
                                    const std::vector<int64_t>& inputIpus, int64_t depth,
                                    int64_t numIpus);

} // namespace popsim::memory
