#pragma once

#include "compiler/pipeline_tasks.h"

#include <cstdint>
#include <vector>

namespace popsim::compiler {

// How micro-batches flow through the pipeline (the schedules of Graphcore's
// pipelining docs; see ../shared/reference/pipelining.md).
enum class ScheduleKind {
  // After a ramp-up each IPU alternates forward and backward tasks
  // (one-forward-one-backward): stage s holds at most 2(S-1-s)+1
  // micro-batches in flight.
  Interleaved,
  // All forward tasks of the step, then all backward tasks (GPipe): every
  // stage stashes all G micro-batches.
  Grouped,
  // One task at a time, micro-batch after micro-batch: one IPU busy at a
  // time (sharded execution; the lowest memory).
  Sequential,
};
const char* scheduleName(ScheduleKind kind);

// One task run on one micro-batch (-1 for update tasks).
struct ScheduledTask {
  size_t task = 0;
  int64_t microBatch = -1;
};

// A pipeline cycle: tasks that run side by side, at most a few per IPU.
// IPUs synchronise and exchange between cycles (BSP), so a cycle lasts as
// long as its busiest IPU.
using PipelineCycle = std::vector<ScheduledTask>;

// The cycles of one step: `microBatches` micro-batches through the
// per-micro-batch tasks in the schedule's order, then (training) one cycle
// with every IPU's update. Every task's inputs come from earlier cycles, so
// IPUs running their tasks in this order never wait on each other in a
// cycle (no deadlock) and results do not depend on thread timing.
std::vector<PipelineCycle> buildSchedule(const compiler::TaskLayout& layout, int64_t microBatches,
                                         ScheduleKind kind);

} // namespace popsim::compiler
