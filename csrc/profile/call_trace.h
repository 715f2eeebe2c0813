#pragma once

#include "popsim/execution_trace.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace popsim::clock {
struct TimelineEvent;
}
namespace popsim::runtime {
class Executable;
}

namespace popsim::profile {

// Event kinds of the transfers around a task; the other kinds ("forward",
// "backward", "forward+backward", "update") are the tasks themselves.
bool isTransferKind(const std::string& kind);
bool isTaskKind(const std::string& kind);

// A call's trace (the public popsim::ExecutionTrace, whose statistics
// call_trace.cpp computes), its events and pipeline.
using CallTrace = popsim::ExecutionTrace;
using TraceEvent = popsim::TraceEvent;
using PipelineInfo = popsim::PipelineInfo;

// The kind of a timeline event: its task's kind, or the transfer it is.
std::string eventKindName(const clock::TimelineEvent& event);
// A timeline event as profiles record it.
TraceEvent traceEventOf(const clock::TimelineEvent& event);

// The executable's last call (empty events before the first call).
CallTrace callTraceOf(const runtime::Executable& executable);
PipelineInfo pipelineInfoOf(const runtime::Executable& executable);

// The median of `values` as Python's statistics.median computes it (the mean
// of the middle two for an even count); 0 for none.
double median(std::vector<double> values);

// Per IPU of `trace`, the median over micro-batches of the cycles of the
// events `counts` accepts (0 for an IPU with none).
std::vector<double> medianPerMicroBatch(const CallTrace& trace,
                                        const std::function<bool(const TraceEvent&)>& counts);

} // namespace popsim::profile
