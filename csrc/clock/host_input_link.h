#pragma once

#include <cstdint>
#include <vector>

namespace popsim::clock {

// When one IPU's input streams cross its host link, on the simulated clock.
// Transfers run one at a time, in the order the IPU's tasks read them. With
// prefetch depth d, d buffers besides the one being read let transfer k start
// as soon as the task that read transfer k-d-1 has finished, so it overlaps
// the work before its own task; with depth 0 it starts when its task is ready.
class HostInputLink {
public:
  struct Transfer {
    uint64_t start = 0;
    uint64_t end = 0;
  };

  explicit HostInputLink(int64_t prefetchDepth) : depth_(prefetchDepth) {}

  // Schedules the next transfer, of `cycles`, for a task that could otherwise
  // start at `taskReady`; the task waits until the transfer's end. It starts
  // no earlier than `notBefore` (the edge of the loop it may overlap in).
  Transfer next(uint64_t taskReady, uint64_t cycles, uint64_t notBefore = 0);
  // The task that read the latest transfer finished at `end`, freeing its buffer.
  void finishedReading(uint64_t end) { readEnds_.push_back(end); }

private:
  int64_t depth_;
  uint64_t linkFree_ = 0;
  std::vector<uint64_t> readEnds_; // per transfer read so far
};

} // namespace popsim::clock
