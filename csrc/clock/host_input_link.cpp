#include "clock/host_input_link.h"

#include <algorithm>

namespace popsim::clock {

HostInputLink::Transfer HostInputLink::next(uint64_t taskReady, uint64_t cycles,
                                            uint64_t notBefore) {
  uint64_t start = std::max(linkFree_, notBefore);
  if (depth_ == 0) {
    start = std::max(start, taskReady);
  } else {
    const size_t index = readEnds_.size();
    const auto buffers = static_cast<size_t>(depth_) + 1;
    if (index >= buffers) start = std::max(start, readEnds_[index - buffers]);
  }
  linkFree_ = start + cycles;
  return {start, linkFree_};
}

} // namespace popsim::clock
