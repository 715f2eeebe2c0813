#pragma once

#include "profile/call_trace.h"
#include "profile/json.h"

#include <string>
#include <vector>

namespace popsim::memory {
struct IpuMemoryReport;
struct MemoryReport;
} // namespace popsim::memory
namespace popsim::runtime {
class Executable;
struct ProgramStep;
struct TaskWallTime;
} // namespace popsim::runtime

// The JSON form of the records a compiled program and its last call give:
// profiles write it, and the Python API's to_dict() methods return it.
namespace popsim::profile {

// One planned tensor of the memory plan, with its lifetime in program steps.
struct MemorySlot {
  std::string description;
  std::string type;
  int64_t ipu = 0;
  std::string region;
  uint64_t bytes = 0;
  int64_t firstStep = 0;
  int64_t lastStep = 0;
  bool offChip = false;
};

std::vector<MemorySlot> memorySlotsOf(const runtime::Executable& executable);

Json toJson(const memory::IpuMemoryReport& ipu);
Json toJson(const memory::MemoryReport& report);
Json toJson(const runtime::ProgramStep& step);
Json toJson(const runtime::TaskWallTime& run);
Json toJson(const MemorySlot& slot);
Json toJson(const TraceEvent& event);
Json toJson(const PipelineInfo& pipeline);
PipelineInfo pipelineFromJson(const Json& entry);

} // namespace popsim::profile
