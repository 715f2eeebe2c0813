#include "profile/call_trace.h"

#include "common/strings.h"
#include "runtime/executable.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <numeric>
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

PipelineInfo pipelineInfoOf(const runtime::Executable& executable) {
  const compiler::TaskLayout& layout = executable.layout();
  return {layout.numStages(),
          layout.numIpus(),
          static_cast<int64_t>(layout.pipelineLength()),
          compiler::scheduleName(executable.options().compiler.schedule),
          static_cast<int64_t>(executable.schedule().size()),
          executable.options().memory.prefetchDepth,
          executable.options().memory.inputsPreparedAhead(),
          executable.options().system.ioTiles,
          executable.options().system.replicasPerHostThread,
          executable.options().clock.hostExchangesStallEveryIpu};
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

namespace popsim {

using profile::median;

bool ExecutionTrace::occupiesIpu(const std::string& kind, bool ioTiles) const {
  if (ioTiles) return false;
  return kind != "host_input" || pipeline.inputsPreparedAhead == 0;
}

uint64_t ExecutionTrace::busyCycles(int64_t ipu) const {
  uint64_t busy = 0;
  for (const TraceEvent& event : events) {
    if (event.ipu == ipu && occupiesIpu(event)) busy += event.end - event.start;
  }
  return busy;
}

double ExecutionTrace::utilisation(int64_t ipu) const {
  return totalCycles != 0 ? static_cast<double>(busyCycles(ipu)) / static_cast<double>(totalCycles)
                          : 0.0;
}

std::vector<double> ExecutionTrace::microBatchCycles() const {
  return profile::medianPerMicroBatch(
      *this, [&](const TraceEvent& e) { return e.kind != "update" && occupiesIpu(e); });
}

std::vector<double> ExecutionTrace::hostLinkCycles() const {
  const std::vector<double> plain = profile::medianPerMicroBatch(
      *this, [](const TraceEvent& e) { return e.kind == "host_input" && !e.ioTiles; });
  const std::vector<double> io = profile::medianPerMicroBatch(
      *this, [](const TraceEvent& e) { return e.kind == "host_input" && e.ioTiles; });
  std::vector<double> result;
  for (size_t ipu = 0; ipu < plain.size(); ++ipu)
    result.push_back(std::max(plain[ipu], io[ipu]));
  return result;
}

std::string ExecutionTrace::render() const {
  int64_t cycles = 0;
  for (const TraceEvent& event : events)
    cycles = std::max(cycles, event.cycle + 1);
  std::vector<std::vector<std::string>> cells(
      static_cast<size_t>(numIpus()), std::vector<std::string>(static_cast<size_t>(cycles)));
  for (const TraceEvent& event : events) {
    if (profile::isTransferKind(event.kind)) continue;
    const std::string prefix = event.kind == "forward"    ? "F"
                               : event.kind == "backward" ? "B"
                                                          : "FB";
    const std::string mark =
        event.kind == "update" ? "U" : prefix + std::to_string(event.microBatch);
    std::string& cell =
        cells.at(static_cast<size_t>(event.ipu)).at(static_cast<size_t>(event.cycle));
    cell = cell.empty() ? mark : cell + "," + mark;
  }
  size_t width = 1;
  for (const auto& row : cells)
    for (const std::string& cell : row)
      width = std::max(width, cell.size());
  char millis[64];
  std::snprintf(millis, sizeof(millis), "%.3f", seconds() * 1e3);
  std::string text = pipeline.schedule + " schedule, " + std::to_string(pipeline.stages) +
                     " stage(s) on " + std::to_string(numIpus()) +
                     " IPU(s): " + withThousandsSeparators(totalCycles) + " cycles (" + millis +
                     " ms simulated)";
  for (size_t ipu = 0; ipu < cells.size(); ++ipu) {
    std::vector<std::string> shown;
    for (const std::string& cell : cells[ipu]) {
      const std::string mark = cell.empty() ? "." : cell;
      shown.push_back(mark + std::string(width - std::min(width, mark.size()), ' '));
    }
    std::string row = "\nIPU" + std::to_string(ipu) + " | " + join(shown, " ");
    row.erase(row.find_last_not_of(' ') + 1); // no padding after the last cell
    text += row;
  }
  return text;
}

namespace {

// `times` once for each replica, replica by replica.
std::vector<double> forEachReplica(const std::vector<double>& times, int64_t replicas) {
  std::vector<double> all;
  all.reserve(times.size() * static_cast<size_t>(replicas));
  for (int64_t replica = 0; replica < replicas; ++replica)
    all.insert(all.end(), times.begin(), times.end());
  return all;
}

} // namespace

PerfCounters ExecutionTrace::perfCounters(int64_t inputs, int64_t replicas) const {
  PerfCounters counters{{{}}, {{}}, {{}}, {{}}};
  replicas = std::max<int64_t>(replicas, 1);
  const double hz = clockHz;
  // A micro-batch's inputs stream together: one span per (step, micro-batch).
  std::map<std::pair<int64_t, int64_t>, std::pair<uint64_t, uint64_t>> spans;
  std::map<int64_t, std::vector<std::pair<uint64_t, uint64_t>>> outputs;
  for (const TraceEvent& event : events) {
    if (event.kind == "host_input") {
      auto [found, inserted] =
          spans.try_emplace({event.step, event.microBatch}, event.start, event.end);
      if (!inserted) {
        found->second.first = std::min(found->second.first, event.start);
        found->second.second = std::max(found->second.second, event.end);
      }
    } else if (event.kind == "host_output" && event.output >= 0) {
      outputs[event.output].emplace_back(event.start, event.end);
    }
  }
  if (!spans.empty() && inputs > 0) {
    std::vector<double> starts, ends;
    for (const auto& [key, span] : spans) {
      starts.push_back(static_cast<double>(span.first) / hz);
      ends.push_back(static_cast<double>(span.second) / hz);
    }
    counters.input.assign(static_cast<size_t>(inputs), forEachReplica(starts, replicas));
    counters.inputComplete.assign(static_cast<size_t>(inputs), forEachReplica(ends, replicas));
  }
  if (!outputs.empty()) {
    counters.output.clear();
    counters.outputComplete.clear();
    for (auto& [index, runs] : outputs) {
      std::sort(runs.begin(), runs.end());
      std::vector<double> starts, ends;
      for (const auto& [start, end] : runs) {
        starts.push_back(static_cast<double>(start) / hz);
        ends.push_back(static_cast<double>(end) / hz);
      }
      counters.output.push_back(forEachReplica(starts, replicas));
      counters.outputComplete.push_back(forEachReplica(ends, replicas));
    }
  }
  return counters;
}

namespace {

using Times = std::vector<std::vector<double>>;

// Per transfer (the j-th time of every tensor), the earliest or the latest
// of its tensors' times; as many transfers as the tensor with fewest.
std::vector<double> perTransfer(const Times& times, bool earliest) {
  std::vector<double> result;
  if (times.empty()) return result;
  size_t transfers = times.front().size();
  for (const std::vector<double>& tensor : times)
    transfers = std::min(transfers, tensor.size());
  for (size_t j = 0; j < transfers; ++j) {
    double value = times.front()[j];
    for (const std::vector<double>& tensor : times)
      value = earliest ? std::min(value, tensor[j]) : std::max(value, tensor[j]);
    result.push_back(value);
  }
  return result;
}

// Each transfer's duration from its start to its end. Inputs outnumber
// outputs with gradient accumulation or output modes: each end pairs with the
// first of its group of starts.
Latency latencyOf(const std::vector<double>& starts, const std::vector<double>& ends) {
  if (starts.empty() || ends.empty()) return {};
  const size_t group = std::max<size_t>(starts.size() / ends.size(), 1);
  std::vector<double> durations;
  for (size_t i = 0; i < ends.size(); ++i) {
    const size_t first = i * group;
    double start = starts.back();
    if (first < starts.size()) {
      start = *std::min_element(
          starts.begin() + static_cast<std::ptrdiff_t>(first),
          starts.begin() + static_cast<std::ptrdiff_t>(std::min(starts.size(), first + group)));
    }
    durations.push_back(ends[i] - start);
  }
  const double sum = std::accumulate(durations.begin(), durations.end(), 0.0);
  const auto [shortest, longest] = std::minmax_element(durations.begin(), durations.end());
  // The sum's rounding must not put the mean of equal durations outside them.
  return {*shortest, *longest,
          std::clamp(sum / static_cast<double>(durations.size()), *shortest, *longest)};
}

} // namespace

Latency PerfCounters::hostIpuLatency() const {
  return latencyOf(perTransfer(input, true), perTransfer(inputComplete, false));
}

Latency PerfCounters::computeLatency() const {
  return latencyOf(perTransfer(inputComplete, false), perTransfer(output, false));
}

Latency PerfCounters::ipuHostLatency() const {
  return latencyOf(perTransfer(output, true), perTransfer(outputComplete, false));
}

Latency PerfCounters::roundTripLatency() const {
  return latencyOf(perTransfer(input, true), perTransfer(outputComplete, false));
}

std::ostream& operator<<(std::ostream& out, const ExecutionTrace& trace) {
  return out << trace.render();
}

} // namespace popsim
