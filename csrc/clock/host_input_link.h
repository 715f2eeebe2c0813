#pragma once

#include "clock/recent_times.h"

#include <cstdint>
#include <vector>

namespace popsim::clock {

// When one IPU's input streams cross its host link, on the simulated clock.
// Transfers run one at a time, in the order the IPU's tasks read them. With
// d inputs prepared ahead (MemoryOptions::inputsPreparedAhead), transfer k
// starts as soon as the task that read transfer k-d-1 has finished, so it
// overlaps the work before its own task; with none it starts when its task
// is ready.
class HostInputLink {
public:
  struct Transfer {
    uint64_t start = 0;
    uint64_t end = 0;
  };

  explicit HostInputLink(int64_t inputsPreparedAhead)
      : depth_(inputsPreparedAhead), readEnds_(static_cast<size_t>(inputsPreparedAhead) + 1) {}

  // Schedules the next transfer, of `cycles`, for a task that could otherwise
  // start at `taskReady`; the task waits until the transfer's end. It starts
  // no earlier than `notBefore` (the edge of the loop it may overlap in).
  Transfer next(uint64_t taskReady, uint64_t cycles, uint64_t notBefore = 0);
  // The task that read the latest transfer finished at `end`, freeing its buffer.
  void finishedReading(uint64_t end) { readEnds_.push(end); }
  // When the link is free for the next transfer.
  uint64_t linkFree() const { return linkFree_; }

  // For the clock's fast-forward (simulated_clock.cpp): the link's state
  // relative to `now`, and the same state `repetitions` periods of
  // `transfers` transfers later, each period `delta` cycles long.
  void appendSignature(std::vector<int64_t>& out, uint64_t now) const;
  void advance(uint64_t delta, size_t transfers, size_t repetitions);

private:
  int64_t depth_;
  uint64_t linkFree_ = 0;
  RecentTimes readEnds_; // when the tasks that read the latest transfers ended
};

} // namespace popsim::clock
