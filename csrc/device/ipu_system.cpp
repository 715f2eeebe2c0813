#include "device/ipu_system.h"

#include "common/check.h"

namespace popsim::device {

void IpuSystemConfig::validate() const {
  POPSIM_CHECK(numIpus >= 1 && numIpus <= 64, ErrorKind::InvalidOption,
               "the number of IPUs must be between 1 and 64, got ", numIpus, ".");
  POPSIM_CHECK(memoryPerIpu <= spec().memoryBytes(), ErrorKind::InvalidOption, "memory per IPU (",
               formatBytes(memoryPerIpu), ") exceeds the ", spec().name, " SRAM of ",
               formatBytes(spec().memoryBytes()), ".");
}

} // namespace popsim::device
