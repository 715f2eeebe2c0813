#pragma once

#include "compiler/pipeline_schedule.h"
#include "compiler/pipeline_tasks.h"
#include "costs/cost_table.h"
#include "device/ipu_system.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace popsim::clock {

// What a timeline event spent its cycles on.
enum class EventPart {
  Compute,  // the task's ops
  LinkCopy, // inter-IPU copies the task receives, before its ops
  // The host's part of streaming the task's micro-batch of the inputs in
  // (preparing and handing over a buffer, which prefetching does ahead), or
  // for inputs through IO tiles the whole transfer into them.
  HostInput,
  // Outputs the task produces that the call returns, streamed to the host:
  // through its compute tiles, or from its IO tiles beside the compute.
  HostOutput,
  // The compute tiles' part of a host transfer: receiving the inputs' bytes
  // from the host, or from the IO tiles; handing outputs to the IO tiles.
  StreamCopy,
  // Off-chip tensors the task streams in from Streaming Memory before its ops,
  // or back out after them.
  StreamingMemory,
};

// Part of one task run of a call on the simulated clock (in cycles): a
// task's host input, link copies, compute and host output follow each other.
struct TimelineEvent {
  int64_t ipu = 0;
  std::string task; // "F0", "B1", "FB3", "U2"
  compiler::TaskKind kind = compiler::TaskKind::Forward;
  int64_t step = 0;       // optimizer step (device iteration) in the call
  int64_t microBatch = 0; // in the call; -1 for updates
  int64_t cycle = 0;      // pipeline cycle in the call
  EventPart part = EventPart::Compute;
  uint64_t start = 0;
  uint64_t end = 0;
  std::vector<int64_t> fromIpus; // LinkCopy: the IPUs the copies come from
  bool ioTiles = false;          // a host transfer through the IO tiles
  int64_t output = -1;           // HostOutput: the graph output it carries
};

// A call as the simulated clock sees it (callSetup builds it from a
// program's cost table).
struct ClockSetup {
  const compiler::TaskLayout* layout = nullptr;
  std::vector<costs::TaskCycles> tasks; // by task index
  const std::vector<compiler::PipelineCycle>* schedule = nullptr;
  int64_t steps = 1;               // repetitions of the schedule per call
  int64_t microBatchesPerStep = 1; // to number micro-batches in the call
  // Micro-batches each host link prepares ahead (MemoryOptions::inputsPreparedAhead).
  int64_t inputsPreparedAhead = 0;
  uint64_t syncCycles = 0; // a sync across the IPUs, after every pipeline cycle
  // Whether a host exchange through an IPU's compute tiles holds up every IPU
  // of the replica. PopART's user guide (sync configuration): with
  // SyncPattern.Full, PopTorch's default, any communication with the host
  // makes all IPUs synchronise; only SinglePipeline lets an IPU exchange with
  // the host while the others process data. So under Full a pipeline cycle
  // lasts its longest host exchange plus its busiest IPU's other work.
  bool hostExchangesStallEveryIpu = true;
  // The outputs a task run streams to the host, by task index and
  // micro-batch in the call.
  std::function<std::vector<costs::HostOutputCost>(size_t task, int64_t microBatch)> hostOutputs;
  // Copy runs of repeated pipeline cycles instead of replaying them (off:
  // the tests' full replay, which must give the same call).
  bool fastForward = true;
};

// A pipeline cycle on the clock: from its start, when every IPU may begin its
// tasks, to its end, after the busiest IPU and the sync that follows it (the
// last `syncCycles` of the span).
struct CycleSpan {
  uint64_t start = 0;
  uint64_t end = 0;
  bool operator==(const CycleSpan& other) const { return start == other.start && end == other.end; }
};

// One call replayed on the simulated clock.
struct SimulatedCall {
  uint64_t cycles = 0;
  // The first step without host transfers: its pipeline cycles' compute.
  uint64_t computeCyclesOfFirstStep = 0;
  std::vector<TimelineEvent> timeline;
  std::vector<CycleSpan> cycleSpans; // by pipeline cycle of the call
  // Pipeline cycles replayed task by task; the others repeated one of them.
  int64_t replayedCycles = 0;
};

// The lockstep replay: pipeline cycles are BSP supersteps of the whole
// machine, so each lasts as long as its busiest IPU, plus a sync; when host
// exchanges stall every IPU (hostExchangesStallEveryIpu), its longest host
// exchange plus the most any IPU does besides its own. The host's
// part of each input transfer runs on the IPU's host link, ahead of its
// task as far as inputsPreparedAhead allows; the task waits only for what is
// still in flight, then receives the bytes on its compute tiles. Through IO
// tiles, the bytes too cross ahead (into two buffers, within their loop) and
// the task only copies them over; outputs through IO tiles leave beside the
// compute, and a step (AccumulationLoop) or the call waits for the last.
// Off-chip tensors loaded through IO tiles stream in the same way, once the
// IPU's earlier stores have left; those stored through them leave beside
// the compute. A run of pipeline cycles that repeat one another (a
// pipeline's steady state) is replayed once and copied forward.
SimulatedCall simulateCall(const ClockSetup& setup);

} // namespace popsim::clock
