#include "compiler/pipeline_schedule.h"

#include "common/check.h"

namespace popsim::compiler {

const char* scheduleName(ScheduleKind kind) {
  switch (kind) {
  case ScheduleKind::Interleaved: return "Interleaved";
  case ScheduleKind::Grouped: return "Grouped";
  case ScheduleKind::Sequential: return "Sequential";
  }
  return "?";
}

namespace {

// Tasks [first, first + length) as a pipeline: in cycle t, task first + p
// runs micro-batch t - p.
void addPipelined(std::vector<PipelineCycle>& cycles, size_t first, size_t length,
                  int64_t microBatches) {
  if (length == 0) return;
  const int64_t steps = microBatches + static_cast<int64_t>(length) - 1;
  for (int64_t t = 0; t < steps; ++t) {
    PipelineCycle cycle;
    for (size_t p = 0; p < length; ++p) {
      const int64_t microBatch = t - static_cast<int64_t>(p);
      if (microBatch >= 0 && microBatch < microBatches) {
        cycle.push_back({first + p, microBatch});
      }
    }
    cycles.push_back(std::move(cycle));
  }
}

} // namespace

std::vector<PipelineCycle> buildSchedule(const compiler::TaskLayout& layout, int64_t microBatches,
                                         ScheduleKind kind) {
  POPSIM_ASSERT(microBatches >= 1, "a schedule needs micro-batches.");
  std::vector<PipelineCycle> cycles;
  const size_t length = layout.pipelineLength();
  switch (kind) {
  case ScheduleKind::Interleaved: addPipelined(cycles, 0, length, microBatches); break;
  case ScheduleKind::Grouped: {
    // Forward tasks (the last stage's FB included), then backward tasks.
    const size_t forward = static_cast<size_t>(layout.numStages());
    addPipelined(cycles, 0, forward, microBatches);
    addPipelined(cycles, forward, length - forward, microBatches);
    break;
  }
  case ScheduleKind::Sequential:
    for (int64_t microBatch = 0; microBatch < microBatches; ++microBatch) {
      for (size_t task = 0; task < length; ++task) {
        cycles.push_back({{task, microBatch}});
      }
    }
    break;
  }
  // Once per step: the gradient-norm tasks, if any, then the updates (which
  // read every IPU's gradient norm), each kind a cycle of all IPUs.
  PipelineCycle norms;
  PipelineCycle updates;
  for (size_t task = length; task < layout.tasks().size(); ++task) {
    const bool norm = layout.tasks()[task].kind == compiler::TaskKind::GradientNorm;
    (norm ? norms : updates).push_back({task, -1});
  }
  for (PipelineCycle* cycle : {&norms, &updates}) {
    if (!cycle->empty()) cycles.push_back(std::move(*cycle));
  }
  return cycles;
}

} // namespace popsim::compiler
