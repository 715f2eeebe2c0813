#pragma once

#include "passes/pipeline_tasks.h"
#include "runtime/pipeline_schedule.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace popsim::runtime {

// What a timeline event spent its cycles on.
enum class EventPart {
  Compute,    // the task's ops
  LinkCopy,   // inter-IPU copies the task receives, before its ops
  HostInput,  // the task's micro-batch of the inputs, streamed in from the host
  HostOutput, // outputs the task produces that the call returns, streamed to the host
  // Off-chip tensors the task streams in from Streaming Memory before its ops,
  // or back out after them.
  StreamingMemory,
};

// Part of one task run of a call on the simulated clock (in cycles): a
// task's host input, link copies, compute and host output follow each other.
struct TimelineEvent {
  int64_t ipu = 0;
  std::string task; // "F0", "B1", "FB3", "U2"
  passes::TaskKind kind = passes::TaskKind::Forward;
  int64_t step = 0;       // optimizer step (device iteration) in the call
  int64_t microBatch = 0; // in the call; -1 for updates
  int64_t cycle = 0;      // pipeline cycle in the call
  EventPart part = EventPart::Compute;
  uint64_t start = 0;
  uint64_t end = 0;
  std::vector<int64_t> fromIpus; // LinkCopy: the IPUs the copies come from
};

// One task's costs, from the cost model.
struct TaskCycles {
  uint64_t computeCycles = 0; // inter-IPU copies included
  uint64_t copyCycles = 0;
  std::vector<int64_t> copySources; // IPUs its inter-IPU copies come from
  bool streamsInputs = false;       // whether it streams a micro-batch of inputs in
  uint64_t inputCycles = 0;         // that stream's transfer
  // Streaming Memory transfers before its ops and after them.
  uint64_t streamInCycles = 0;
  uint64_t streamOutCycles = 0;
};

// A call as the simulated clock sees it.
struct ClockSetup {
  const passes::TaskLayout* layout = nullptr;
  const std::vector<TaskCycles>* tasks = nullptr; // by task index
  const std::vector<PipelineCycle>* schedule = nullptr;
  int64_t steps = 1;               // repetitions of the schedule per call
  int64_t microBatchesPerStep = 1; // to number micro-batches in the call
  int64_t prefetchDepth = 1;
  uint64_t syncCycles = 0; // a sync across the IPUs, after every pipeline cycle
  // The transfer cycles of each output a task run streams to the host, by
  // task index and micro-batch in the call.
  std::function<std::vector<uint64_t>(size_t task, int64_t microBatch)> hostOutputs;
};

// One call replayed on the simulated clock.
struct SimulatedCall {
  uint64_t cycles = 0;
  // The first step without host transfers: its pipeline cycles' compute.
  uint64_t computeCyclesOfFirstStep = 0;
  std::vector<TimelineEvent> timeline;
};

// The lockstep replay: pipeline cycles are BSP supersteps of the whole
// machine, so each lasts as long as its busiest IPU, plus a sync. Inputs
// stream on each IPU's host link, ahead of their tasks as far as the
// prefetch depth allows; a task waits only for what is still in flight.
SimulatedCall simulateCall(const ClockSetup& setup);

} // namespace popsim::runtime
