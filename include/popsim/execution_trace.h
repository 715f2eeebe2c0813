#pragma once

// What each simulated IPU did during a call, on the simulated clock (Python's
// popsim.ExecutionTrace, from executionTrace()): every task run and transfer
// as an event, the statistics the profile's analysis and the sizing report
// read off it, the text timeline, and PopTorch's performance counters. The
// core fills these structs itself, for Python and C++ alike.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace popsim {

/// One part of a task run: the task itself or a transfer around it.
struct TraceEvent {
  int64_t ipu = 0;
  std::string task; ///< "F0", "B1", "FB3" (the last stage's forward and backward), "U2"
  /// "forward", "backward", "forward+backward", "update"; or a transfer:
  /// "host_input" (the host's part of streaming a micro-batch in),
  /// "stream_copy" (the compute tiles' part), "copy" (inter-IPU copies
  /// received), "host_output", "streaming" (off-chip tensors).
  std::string kind;
  int64_t step = 0;
  int64_t microBatch = 0; ///< -1 for updates
  int64_t cycle = 0;      ///< pipeline cycle in the call
  uint64_t start = 0;     ///< IPU clock cycles from the call's start
  uint64_t end = 0;
  std::vector<int64_t> fromIpus; ///< "copy": the IPUs the copies come from
  bool ioTiles = false;          ///< a host transfer through the IO tiles
  int64_t output = -1;           ///< "host_output": the graph output it carries
};

/// The program's pipeline.
struct PipelineInfo {
  int64_t stages = 0;
  int64_t ipus = 0;
  int64_t pipelineStages = 0;
  std::string schedule; ///< "Interleaved", "Grouped", "Sequential"
  int64_t cyclesPerStep = 0;
  int64_t prefetchDepth = 0;       ///< Options.prefetchDepth (PopART's buffering depth)
  int64_t inputsPreparedAhead = 0; ///< micro-batches each host link prepares ahead
  int64_t ioTiles = 0;
  int64_t replicasPerHostThread = 1; ///< replicas taking turns on each host thread
  /// SyncPattern.Full: every IPU waits out any IPU's host exchange
  bool hostExchangesStallEveryIpu = false;
};

/// (min, max, mean) of a latency over a call's transfers, in seconds.
struct Latency {
  double min = 0;
  double max = 0;
  double mean = 0;
};

/// PopTorch's performance counters of a call, in seconds from its start on
/// the simulated clock: per input (or output) by index, the time of each of
/// its transfers, as PopTorch lists them: one per micro-batch (or returned
/// output) of each replica, replica by replica. popsim streams a
/// micro-batch's inputs together, so every input has the same times, and
/// replicas run alike, so each replica's times are the same.
struct PerfCounters {
  std::vector<std::vector<double>> input;          ///< the IPU asks the host for it
  std::vector<std::vector<double>> inputComplete;  ///< it has arrived
  std::vector<std::vector<double>> output;         ///< it starts to stream to the host
  std::vector<std::vector<double>> outputComplete; ///< it has arrived on the host

  /// From the first of a transfer's inputs requested to the last arrived.
  Latency hostIpuLatency() const;
  /// From the last of a transfer's inputs arrived to the last of its outputs ready.
  Latency computeLatency() const;
  /// From the first of a transfer's outputs ready to the last arrived on the host.
  Latency ipuHostLatency() const;
  /// From the first of a transfer's inputs requested to the last of its outputs arrived.
  Latency roundTripLatency() const;
};

struct ExecutionTrace {
  std::vector<TraceEvent> events;
  uint64_t totalCycles = 0;
  double clockHz = 0;
  PipelineInfo pipeline;

  int64_t numIpus() const { return pipeline.ipus; }
  double seconds() const { return clockHz != 0 ? static_cast<double>(totalCycles) / clockHz : 0; }
  /// Whether the IPU's compute tiles are busy during an event of `kind`:
  /// always, except for host inputs prefetched on the host link and transfers
  /// through the IO tiles.
  bool occupiesIpu(const std::string& kind, bool ioTiles) const;
  bool occupiesIpu(const TraceEvent& event) const { return occupiesIpu(event.kind, event.ioTiles); }
  /// Cycles the IPU spent on its tasks and the transfers that occupy it.
  uint64_t busyCycles(int64_t ipu) const;
  double utilisation(int64_t ipu) const;
  /// Per IPU, the median over micro-batches of the cycles it spends on one
  /// micro-batch: its forward and backward tasks with the transfers that
  /// occupy it (updates left out; the median leaves out one-off transfers).
  std::vector<double> microBatchCycles() const;
  /// Per IPU, the median over micro-batches of the cycles its host link spends
  /// streaming one micro-batch's inputs (through the compute tiles or the IO
  /// tiles, whichever is longer); 0 for an IPU that streams none. With
  /// prefetching the link works beside the IPU, a pipeline stage of its own.
  std::vector<double> hostLinkCycles() const;
  /// The text timeline: a header, then a row per IPU and a column per
  /// pipeline cycle with the tasks it ran there ("F3", "B0", "FB2", "U").
  std::string render() const;
  /// PopTorch's counters of a call whose graph has `inputs` inputs, run by
  /// `replicas` replicas (of this process); empty lists ([[]]) for a call
  /// without transfers.
  PerfCounters perfCounters(int64_t inputs, int64_t replicas = 1) const;
};

std::ostream& operator<<(std::ostream& out, const ExecutionTrace& trace);

} // namespace popsim
