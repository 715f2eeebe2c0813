#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace popsim::clock {

// The last `capacity` times of an ever-growing series (when each buffer of
// a link was released, when each transfer ended), and how many there were:
// all the clock's replay reads of such a series, in a fixed size. Being a
// fixed-size state, it can be compared relative to the clock's present
// (signature) and moved forward by a whole number of repeated pipeline
// cycles (advance) without replaying them.
class RecentTimes {
public:
  explicit RecentTimes(size_t capacity) : ring_(std::max<size_t>(capacity, 1), 0) {}

  size_t count() const { return count_; }
  // The time `back` entries before the next one (1: the latest); needs
  // back <= min(count(), capacity).
  uint64_t back(size_t back) const { return ring_[(count_ - back) % ring_.size()]; }
  void push(uint64_t time) {
    ring_[count_ % ring_.size()] = time;
    ++count_;
  }

  // Appends the kept times, oldest first, relative to `now`, and how many
  // are kept (which grows until the ring is full).
  void appendSignature(std::vector<int64_t>& out, uint64_t now) const {
    const size_t kept = std::min(count_, ring_.size());
    out.push_back(static_cast<int64_t>(kept));
    for (size_t k = kept; k > 0; --k)
      out.push_back(static_cast<int64_t>(back(k)) - static_cast<int64_t>(now));
  }
  // The state after `repetitions` more periods of a series that repeats
  // itself every `period` entries, `delta` cycles later each time (what
  // equal signatures one period apart show): the window holds the same
  // entries, repetitions x delta later.
  void advance(uint64_t delta, size_t period, size_t repetitions) {
    const size_t kept = std::min(count_, ring_.size());
    std::vector<uint64_t> latest;
    for (size_t k = kept; k > 0; --k)
      latest.push_back(back(k));
    count_ += period * repetitions;
    for (size_t k = 0; k < latest.size(); ++k)
      ring_[(count_ - kept + k) % ring_.size()] = latest[k] + delta * repetitions;
  }

private:
  std::vector<uint64_t> ring_;
  size_t count_ = 0;
};

} // namespace popsim::clock
