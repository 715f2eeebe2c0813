#include "clock/host_input_link.h"

#include <algorithm>

namespace popsim::clock {

HostInputLink::Transfer HostInputLink::next(uint64_t taskReady, uint64_t cycles,
                                            uint64_t notBefore) {
  uint64_t start = std::max(linkFree_, notBefore);
  if (depth_ == 0) {
    start = std::max(start, taskReady);
  } else {
    // Transfer k waits for the buffer transfer k - (depth + 1) was read from.
    const auto buffers = static_cast<size_t>(depth_) + 1;
    if (readEnds_.count() >= buffers) start = std::max(start, readEnds_.back(buffers));
  }
  linkFree_ = start + cycles;
  return {start, linkFree_};
}

void HostInputLink::appendSignature(std::vector<int64_t>& out, uint64_t now) const {
  out.push_back(static_cast<int64_t>(linkFree_) - static_cast<int64_t>(now));
  readEnds_.appendSignature(out, now);
}

void HostInputLink::advance(uint64_t delta, size_t transfers, size_t repetitions) {
  linkFree_ += delta * repetitions;
  readEnds_.advance(delta, transfers, repetitions);
}

} // namespace popsim::clock
