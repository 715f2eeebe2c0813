#include "profile/call_trace.h"

#include "runtime/executable.h"

#include <algorithm>
#include <functional>
#include <map>
#include <tuple>

namespace popsim::profile {
namespace {

const char* taskKindName(compiler::TaskKind kind) {
  switch (kind) {
  case compiler::TaskKind::Forward: return "forward";
  case compiler::TaskKind::Backward: return "backward";
  case compiler::TaskKind::ForwardBackward: return "forward+backward";
  case compiler::TaskKind::GradientNorm: // the optimizer step's first part
  case compiler::TaskKind::Update: return "update";
  }
  return "?";
}

} // namespace

std::string eventKindName(const clock::TimelineEvent& event) {
  switch (event.part) {
  case clock::EventPart::LinkCopy: return "copy";
  case clock::EventPart::HostInput: return "host_input";
  case clock::EventPart::HostOutput: return "host_output";
  case clock::EventPart::StreamCopy: return "stream_copy";
  case clock::EventPart::StreamingMemory: return "streaming";
  case clock::EventPart::Compute: break;
  }
  return taskKindName(event.kind);
}

namespace {

// Per IPU, the median over micro-batches of the cycles of the events
// `counts` accepts (0 for an IPU with none).
std::vector<double> medianPerMicroBatch(const CallTrace& trace,
                                        const std::function<bool(const TraceEvent&)>& counts) {
  std::map<std::tuple<int64_t, int64_t, int64_t>, uint64_t> work;
  for (const TraceEvent& event : trace.events) {
    if (counts(event)) work[{event.ipu, event.step, event.microBatch}] += event.end - event.start;
  }
  std::vector<double> result;
  for (int64_t ipu = 0; ipu < trace.numIpus(); ++ipu) {
    std::vector<double> cycles;
    for (const auto& [key, value] : work) {
      if (std::get<0>(key) == ipu) cycles.push_back(static_cast<double>(value));
    }
    result.push_back(median(std::move(cycles)));
  }
  return result;
}

} // namespace

bool isTransferKind(const std::string& kind) {
  return kind == "copy" || kind == "host_input" || kind == "stream_copy" || kind == "host_output" ||
         kind == "streaming";
}

bool isTaskKind(const std::string& kind) {
  return kind == "forward" || kind == "backward" || kind == "forward+backward" || kind == "update";
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  if (values.size() % 2 == 1) return values[middle];
  return (values[middle - 1] + values[middle]) / 2;
}

bool CallTrace::occupiesIpu(const TraceEvent& event) const {
  if (event.ioTiles) return false;
  return event.kind != "host_input" || pipeline.prefetchDepth == 0;
}

uint64_t CallTrace::busyCycles(int64_t ipu) const {
  uint64_t busy = 0;
  for (const TraceEvent& event : events) {
    if (event.ipu == ipu && occupiesIpu(event)) busy += event.end - event.start;
  }
  return busy;
}

double CallTrace::utilisation(int64_t ipu) const {
  return totalCycles != 0 ? static_cast<double>(busyCycles(ipu)) / static_cast<double>(totalCycles)
                          : 0.0;
}

std::vector<double> CallTrace::hostLinkCycles() const {
  const std::vector<double> plain = medianPerMicroBatch(
      *this, [](const TraceEvent& e) { return e.kind == "host_input" && !e.ioTiles; });
  const std::vector<double> io = medianPerMicroBatch(
      *this, [](const TraceEvent& e) { return e.kind == "host_input" && e.ioTiles; });
  std::vector<double> result;
  for (size_t ipu = 0; ipu < plain.size(); ++ipu)
    result.push_back(std::max(plain[ipu], io[ipu]));
  return result;
}

PipelineInfo pipelineInfoOf(const runtime::Executable& executable) {
  const compiler::TaskLayout& layout = executable.layout();
  return {layout.numStages(),
          layout.numIpus(),
          static_cast<int64_t>(layout.pipelineLength()),
          compiler::scheduleName(executable.options().compiler.schedule),
          static_cast<int64_t>(executable.schedule().size()),
          executable.options().memory.prefetchDepth,
          executable.options().system.ioTiles,
          executable.options().system.replicasPerHostThread};
}

TraceEvent traceEventOf(const clock::TimelineEvent& event) {
  return {event.ipu,        event.task,    eventKindName(event), event.step,
          event.microBatch, event.cycle,   event.start,          event.end,
          event.fromIpus,   event.ioTiles, event.output};
}

CallTrace callTraceOf(const runtime::Executable& executable) {
  CallTrace trace;
  for (const clock::TimelineEvent& event : executable.lastTimeline()) {
    trace.events.push_back(traceEventOf(event));
  }
  trace.totalCycles = executable.lastRunCycles();
  trace.clockHz = executable.options().system.spec().clockHz;
  trace.pipeline = pipelineInfoOf(executable);
  return trace;
}

} // namespace popsim::profile
