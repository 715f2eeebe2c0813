#pragma once

#include "compiler/pass.h"
#include "compiler/passes/stage_assignment.h"
#include "compiler/pipeline_tasks.h"
#include "compiler/training/training_program.h"

#include <memory>
#include <vector>

// Factories for every graph pass. Each pass lives in its own file, named after
// the factory, with its algorithm written out at the top.
namespace popsim::compiler {

// Removes nodes whose results are never used, then unused weights and constants.
std::unique_ptr<Pass> createDeadCodeEliminationPass();

// Removes layout no-ops: reshapes to the same shape, reshape chains, identity
// permutes, full slices and affine(scale=1, shift=0).
std::unique_ptr<Pass> createSimplifyLayoutPass();

// assignStages: every node's stage and IPU from its block.
std::unique_ptr<Pass> createStageAssignmentPass(std::vector<StageAssignment> stages);

// buildTrainingProgram: backward pass, gradient accumulation and optimizer step.
std::unique_ptr<Pass> createTrainingProgramPass(TrainingConfig config,
                                                int64_t gradientAccumulation);

// makeInferenceProgram: fresh random draws per micro-batch (and sharded
// weights, from `replication`).
std::unique_ptr<Pass> createInferenceProgramPass(TrainingConfig replication = {});

// makeGradientProgram: the loss's gradients as the outputs.
std::unique_ptr<Pass> createGradientProgramPass();

// orderNodesByTask under `layout`, which must outlive the pass.
std::unique_ptr<Pass> createTaskOrderPass(const TaskLayout& layout);

// insertIpuCopies: every node reads values on its own IPU.
std::unique_ptr<Pass> createIpuCopiesPass();

// recomputeStages under `layout`, which must outlive the pass.
std::unique_ptr<Pass> createRecomputationPass(const TaskLayout& layout);

// gatherShardedWeightsPerTask under `layout`, which must outlive the pass.
std::unique_ptr<Pass> createWeightGatherPass(const TaskLayout& layout);

} // namespace popsim::compiler
