#include "ir/host_overlap.h"

namespace popsim::ir {

const char* hostOverlapName(HostOverlap overlap) {
  switch (overlap) {
  case HostOverlap::None: return "no_overlap";
  case HostOverlap::AccumulationLoop: return "overlap_accumulation_loop";
  case HostOverlap::DeviceIterationLoop: return "overlap_device_iteration_loop";
  }
  return "?";
}

std::optional<HostOverlap> parseHostOverlap(const std::string& name) {
  for (HostOverlap overlap :
       {HostOverlap::None, HostOverlap::AccumulationLoop, HostOverlap::DeviceIterationLoop}) {
    if (name == hostOverlapName(overlap)) return overlap;
  }
  return std::nullopt;
}

} // namespace popsim::ir
