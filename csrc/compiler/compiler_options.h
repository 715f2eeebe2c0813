#pragma once

#include "compiler/passes/stage_assignment.h"
#include "compiler/training/training_program.h"

#include <cstdint>
#include <vector>

namespace popsim::compiler {

// What to build from the imported graph.
enum class ProgramKind {
  Inference, // the graph as it is
  Training,  // forward, backward and optimizer step (needs a loss and `training`)
  Gradients, // outputs are the loss's gradients (for tests and debugging)
};

// What the compile sequence needs to know: the program to build, where its
// blocks run and how many micro-batches feed a pipeline.
struct CompilerOptions {
  ProgramKind program = ProgramKind::Inference;
  // Training's step; an inference program reads only its replication fields
  // (replicas, systemIpus, shardedWeights).
  compiler::TrainingConfig training;
  // Stage and IPU of each block (empty for a model without blocks).
  std::vector<compiler::StageAssignment> stages;
  // Whether the stages run as a pipeline (which must fill) or one at a time.
  bool pipelined = true;
  // Training: each stage's backward pass recomputes its forward activations.
  bool recomputation = false;
  int64_t deviceIterations = 1;
  int64_t gradientAccumulation = 1;
  int64_t numIpus = 1; // the simulated system's
  int64_t ioTiles = 0; // per IPU (TensorLocations.numIOTiles)
};

} // namespace popsim::compiler
