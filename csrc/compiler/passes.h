#pragma once

#include "compiler/pass.h"
#include "compiler/pass_manager.h"

#include <memory>
#include <string>
#include <vector>

// Every pass of the compiler, by name. Each lives in its own file (named
// after it) with its algorithm written out at the top, and takes what it
// needs from the PassContext (options, system, task layout), so that any
// pass can be built by name: for POPSIM_DISABLE_PASSES and popsim-opt.
namespace popsim::compiler {

// --- Program-independent passes ---
// stage-assignment: every node's stage and IPU from its block.
std::unique_ptr<Pass> createStageAssignmentPass();
// simplify-layout: removes layout no-ops (reshapes to the same shape, reshape
// chains, identity permutes, full slices, affine(scale=1, shift=0)).
std::unique_ptr<Pass> createSimplifyLayoutPass();
// dead-code-elimination: removes nodes whose results are never used, then
// unused weights and constants.
std::unique_ptr<Pass> createDeadCodeEliminationPass();

// --- The training program (compiler/training), in its order ---
// weight-sharding: sharded weights stored as their replica's shard,
// gathered where they are read.
std::unique_ptr<Pass> createWeightShardingPass();
// autodiff: the loss's gradients of the trained parameters, seeded with 1,
// into the gradient map; anchored gradients become outputs.
std::unique_ptr<Pass> createAutodiffPass();
// gradient-accumulation: the map's gradients summed (or averaged) into
// accumulators over the step's micro-batches.
std::unique_ptr<Pass> createGradientAccumulationPass();
// random-counters: every IPU's random counter advanced once per micro-batch.
std::unique_ptr<Pass> createRandomCountersPass();
// replica-reduction: the step's gradients summed over the replicas (or
// their groups), or reduce-scattered for sharded parameters.
std::unique_ptr<Pass> createReplicaReductionPass();
// loss-scaling: the backward pass seeded with the loss scaling factor, the
// step's gradients divided by it, and automatic loss scaling's statistics
// and factor update.
std::unique_ptr<Pass> createLossScalingPass();
// gradient-clipping: the step's gradients scaled to a global 2-norm of at
// most max_grad_norm.
std::unique_ptr<Pass> createGradientClippingPass();
// optimizer-step: step counts, hyper-parameters and each parameter's fused
// update from the map's gradient; accumulators cleared; the map consumed.
std::unique_ptr<Pass> createOptimizerStepPass();
// gradient-program: outputs become the loss's gradients of the float inputs
// and trainable weights (for tests).
std::unique_ptr<Pass> createGradientProgramPass();

// --- Passes over tasks (a program whose nodes have their placements) ---
// task-order: nodes in pipeline task order.
std::unique_ptr<Pass> createTaskOrderPass();
// ipu-copies: every node reads values on its own IPU.
std::unique_ptr<Pass> createIpuCopiesPass();
// recomputation: backward tasks recompute their stage's forward values.
std::unique_ptr<Pass> createRecomputationPass();
// weight-gathers: a task reading a sharded weight gathered in another task
// gathers it itself.
std::unique_ptr<Pass> createWeightGathersPass();

// --- Checks ---
// check-host-overlap: overlapped inputs and outputs need IO tiles and a
// non-pipelined execution.
std::unique_ptr<Pass> createHostOverlapCheck();
// check-loss: training and gradient programs need a loss.
std::unique_ptr<Pass> createLossCheck();
// check-program: inputs can be split into micro-batches, and an inference
// program returns something.
std::unique_ptr<Pass> createProgramCheck();
// check-tasks: the stages fit the system, and a pipeline gets enough
// micro-batches to fill.
std::unique_ptr<Pass> createTaskLayoutCheck();

// A pass by name (InvalidOption naming the known ones for another name).
std::unique_ptr<Pass> createPass(const std::string& name);
std::vector<std::string> allPassNames();
std::vector<std::string> optionalPassNames();

// The compile pipeline for `options`, the passes it does not need left out:
// stage-assignment, the program (training, gradient or inference), its
// clean-up, the checks, then the passes over tasks.
std::unique_ptr<PassPipeline> compilePipeline(const CompilerOptions& options);

// The training program's passes alone on `graph` (for tests): what
// compilePipeline runs for a training program with this configuration.
void buildTrainingProgram(ir::Graph& graph, const TrainingConfig& config,
                          int64_t gradientAccumulation);

} // namespace popsim::compiler
