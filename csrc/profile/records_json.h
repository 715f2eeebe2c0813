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
} // namespace popsim::runtime

// The JSON form of the records a compiled program and its last call give:
// profiles write it, and the Python API's to_dict() methods return it.
namespace popsim::profile {

Json toJson(const memory::IpuMemoryReport& ipu);
Json toJson(const memory::MemoryReport& report);
Json toJson(const runtime::ProgramStep& step);
Json toJson(const TraceEvent& event);
Json toJson(const PipelineInfo& pipeline);
PipelineInfo pipelineFromJson(const Json& entry);
// A trace event from toJson's form (the inverse of toJson(const TraceEvent&)).
TraceEvent traceEventFromJson(const Json& entry);

} // namespace popsim::profile
