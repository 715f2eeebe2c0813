#pragma once

#include <cstdint>
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

// One part of a task run of a call on the simulated clock, as profiles
// record it: clock::TimelineEvent with its kind named.
struct TraceEvent {
  int64_t ipu = 0;
  std::string task; // "F0", "B1", "FB3", "U2"
  std::string kind; // a task kind or a transfer kind
  int64_t step = 0;
  int64_t microBatch = 0; // -1 for updates
  int64_t cycle = 0;      // pipeline cycle in the call
  uint64_t start = 0;
  uint64_t end = 0;
  std::vector<int64_t> fromIpus; // "copy": the IPUs the copies come from
  bool ioTiles = false;          // a host transfer through the IO tiles
  int64_t output = -1;           // "host_output": the graph output it carries
};

// The program's pipeline as profiles draw it.
struct PipelineInfo {
  int64_t stages = 0;
  int64_t ipus = 0;
  int64_t pipelineStages = 0;
  std::string schedule;
  int64_t cyclesPerStep = 0;
  int64_t prefetchDepth = 0;
  int64_t ioTiles = 0;
  int64_t replicasPerHostThread = 1; // replicas taking turns on each host thread
};

// What each simulated IPU did during one call, with the statistics the
// profile's analysis and the sizing report read off it.
struct CallTrace {
  std::vector<TraceEvent> events;
  uint64_t totalCycles = 0;
  double clockHz = 0;
  PipelineInfo pipeline;

  int64_t numIpus() const { return pipeline.ipus; }
  double seconds() const { return clockHz != 0 ? static_cast<double>(totalCycles) / clockHz : 0; }
  // Whether the IPU's compute tiles are busy during the event: always, except
  // for host inputs prefetched on the host link and transfers through IO tiles.
  bool occupiesIpu(const TraceEvent& event) const;
  // Cycles the IPU spent on its tasks and the transfers that occupy it.
  uint64_t busyCycles(int64_t ipu) const;
  double utilisation(int64_t ipu) const;
  // Per IPU, the median over micro-batches of the cycles its host link spends
  // streaming one micro-batch's inputs (through the compute tiles or the IO
  // tiles, whichever is longer); 0 for an IPU that streams none.
  std::vector<double> hostLinkCycles() const;
};

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

} // namespace popsim::profile
