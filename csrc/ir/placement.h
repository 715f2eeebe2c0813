#pragma once

#include <cstdint>
#include <string>

namespace popsim::ir {

// Where an op runs on the simulated machine: the user's block annotation and
// the IPU it was assigned to. Without annotations everything is on IPU 0.
struct Placement {
  std::string block;
  int64_t ipu = 0;

  bool operator==(const Placement& other) const { return block == other.block && ipu == other.ipu; }
};

} // namespace popsim::ir
