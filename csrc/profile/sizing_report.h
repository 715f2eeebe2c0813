#pragma once

#include "popsim/sizing_report.h"
#include "profile/json.h"
#include "profile/pipeline_stages.h"
#include "profile/time_breakdown.h"

#include <string>
#include <vector>

namespace popsim::runtime {
class Executable;
}

// The sizing report: what a job needs and how long it takes on the simulated
// IPUs, from a compiled program and its last call (usually a cost-only one).
// Every figure comes from the memory plan and the simulated clock; none is
// measured on the host. A replicated job's replicas run the same program on
// their own IPUs, so one replica's IPUs stand for all of them; throughput
// counts every replica of every process.
namespace popsim::profile {

using ::popsim::IpuSizing;
using ::popsim::SizingReport;

// The sizing advice's recomputation on one IPU, which needs checkpoints (the
// C++ API, which has none, leaves this phrase out: api/cpp_spelling.cpp).
inline constexpr const char* kOneIpuCheckpoints =
    "recomputation checkpoints (popsim.recomputationCheckpoint with "
    "Options.Training.recomputation(True); on one IPU nothing else recomputes), ";

// How the job runs a call: what the program alone does not say.
struct SizingJob {
  std::string model;
  int64_t replicas = 1; // of the whole job, every process's
  int64_t processes = 1;
  int64_t stepsPerCall = 1;        // device iterations
  int64_t microBatchesPerStep = 1; // gradient accumulation, 1 for inference
  int64_t itemsPerCall = 0;        // over all replicas and processes
};

// The report's fields, each IPU's with "fits", and the derived figures, as
// profiles keep them and Python's SizingReport.to_dict() gives them; and back.
Json toJson(const SizingReport& report);
SizingReport sizingReportFromJson(const Json& entry);

// The report of the executable's last call.
SizingReport sizingReport(const runtime::Executable& executable, const SizingJob& job,
                          const std::vector<StageBlocks>& stages);
// The same from the call's trace (callTraceOf) and memory.json or just its
// "ipus" (memoryIpuEntries), for a caller that has them already.
SizingReport sizingReport(const runtime::Executable& executable, const SizingJob& job,
                          const std::vector<StageBlocks>& stages, const CallTrace& trace,
                          const Json& memoryJson);

} // namespace popsim::profile
