#pragma once

#include "compiler/compiler_options.h"
#include "compiler/pipeline_schedule.h"
#include "compiler/pipeline_tasks.h"
#include "ir/graph.h"

#include <memory>
#include <vector>

namespace popsim::compiler {

// Where one micro-batch's value of a graph output goes in the call's host
// buffer (slot < 0: not returned), and whether it adds to what is there
// (OutputMode.Sum).
struct OutputCopy {
  int64_t slot = -1;
  bool accumulate = false;
};

// The compiler's result, which every later stage reads: the optimised graph,
// its tasks, the cycles one step runs them in, and how calls feed it.
struct Program {
  std::unique_ptr<ir::Graph> graph;
  TaskLayout layout;
  std::vector<PipelineCycle> schedule;
  ProgramKind kind = ProgramKind::Inference;
  ScheduleKind scheduleKind = ScheduleKind::Interleaved;
  int64_t deviceIterations = 1;
  int64_t gradientAccumulation = 1;
  OutputSpec output;

  bool training() const { return kind != ProgramKind::Inference; }
  int64_t microBatchesPerCall() const { return deviceIterations * gradientAccumulation; }
  // A training step is one optimizer step's micro-batches; an inference
  // program runs a call's micro-batches as one step.
  int64_t microBatchesPerStep() const {
    return training() ? gradientAccumulation : microBatchesPerCall();
  }
  int64_t stepsPerCall() const { return training() ? deviceIterations : 1; }
  // A scheduled task's micro-batch in the call (-1 for per-step tasks).
  int64_t callMicroBatch(const ScheduledTask& scheduled, int64_t step) const {
    return scheduled.microBatch < 0 ? -1 : step * microBatchesPerStep() + scheduled.microBatch;
  }
  // Per IPU, the tasks of one step in the order it runs them.
  std::vector<std::vector<ScheduledTask>> ipuOrders() const;
  // Where output `index` of `microBatch` (in the call) goes: input updates
  // return every micro-batch's rows, the others follow the output mode.
  OutputCopy outputCopy(size_t index, int64_t microBatch) const;
  // Host types of one call's inputs and outputs (micro-batches stacked).
  std::vector<ir::TensorType> inputHostTypes() const;
  std::vector<ir::TensorType> outputHostTypes() const;
};

// The program of a graph that is already optimised (the compiler's output, or
// one read back from bytes): its task layout from the nodes' placements and
// its schedule from the options.
Program programOf(std::unique_ptr<ir::Graph> graph, const CompilerOptions& options);

} // namespace popsim::compiler
