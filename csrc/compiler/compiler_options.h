#pragma once

#include "compiler/output_spec.h"
#include "compiler/passes/stage_assignment.h"
#include "compiler/pipeline_schedule.h"
#include "compiler/training/training_config.h"

#include <cstdint>
#include <vector>

namespace popsim::compiler {

// What to build from the imported graph.
enum class ProgramKind {
  Inference, // the graph as it is
  Training,  // forward, backward and optimizer step (needs a loss and `training`)
  Gradients, // outputs are the loss's gradients (for tests and debugging)
};

// What the compiler needs to know: the program to build, where its blocks
// run, the schedule its tasks follow and how calls feed it. (The simulated
// system it compiles for is a device::IpuSystemConfig of its own.)
struct CompilerOptions {
  ProgramKind program = ProgramKind::Inference;
  // Training's step; an inference program reads only its replication fields
  // (replicas, systemIpus, shardedWeights).
  TrainingConfig training;
  // Stage and IPU of each block (empty for a model without blocks).
  std::vector<StageAssignment> stages;
  // How the stages share the IPUs' time: a pipeline (Interleaved or Grouped,
  // which must fill) or one task at a time (Sequential: sharded and phased
  // executions).
  ScheduleKind schedule = ScheduleKind::Interleaved;
  // Training: each stage's backward pass recomputes its forward activations
  // from the stashed stage inputs (less stash memory, more compute).
  bool recomputation = false;
  // Iterations of the program per call. Each runs `gradientAccumulation`
  // micro-batches (then, in training, one optimizer step), so a call's inputs
  // carry deviceIterations x gradientAccumulation micro-batches stacked along
  // dimension 0, and outputs are counted per micro-batch.
  int64_t deviceIterations = 1;
  int64_t gradientAccumulation = 1;
  // Which micro-batches' outputs a call returns.
  OutputSpec output;

  bool pipelined() const { return schedule != ScheduleKind::Sequential; }
  int64_t microBatchesPerCall() const { return deviceIterations * gradientAccumulation; }
};

} // namespace popsim::compiler
