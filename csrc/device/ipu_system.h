#pragma once

#include "device/chip_spec.h"

#include <cstdint>

namespace popsim::device {

// The simulated machine a program is compiled for.
struct IpuSystemConfig {
  ChipVersion chip = ChipVersion::Mk2;
  int64_t numIpus = 1;
  // Memory of each IPU in bytes; 0 means the chip's full SRAM. Setting it
  // lower lets users size models for a fraction of an IPU (and tests show
  // out-of-memory errors without huge models).
  uint64_t memoryPerIpu = 0;

  const ChipSpec& spec() const { return chipSpec(chip); }
  uint64_t memoryCapacity() const {
    return memoryPerIpu != 0 ? memoryPerIpu : spec().memoryBytes();
  }
  // Throws InvalidOption naming the setting when a value is out of range.
  void validate() const;
};

} // namespace popsim::device
