// Every pass by name, and the compile pipeline built from them.

#include "common/check.h"
#include "common/strings.h"
#include "compiler/passes.h"

#include <functional>
#include <map>

namespace popsim::compiler {
namespace {

using Factory = std::unique_ptr<Pass> (*)();

// In the order the compile pipeline runs them.
const std::vector<std::pair<std::string, Factory>>& registry() {
  static const std::vector<std::pair<std::string, Factory>> passes = {
      {"check-host-overlap", createHostOverlapCheck},
      {"stage-assignment", createStageAssignmentPass},
      {"check-loss", createLossCheck},
      {"weight-sharding", createWeightShardingPass},
      {"autodiff", createAutodiffPass},
      {"gradient-accumulation", createGradientAccumulationPass},
      {"random-counters", createRandomCountersPass},
      {"replica-reduction", createReplicaReductionPass},
      {"loss-scaling", createLossScalingPass},
      {"gradient-clipping", createGradientClippingPass},
      {"optimizer-step", createOptimizerStepPass},
      {"gradient-program", createGradientProgramPass},
      {"simplify-layout", createSimplifyLayoutPass},
      {"dead-code-elimination", createDeadCodeEliminationPass},
      {"check-program", createProgramCheck},
      {"check-tasks", createTaskLayoutCheck},
      {"task-order", createTaskOrderPass},
      {"ipu-copies", createIpuCopiesPass},
      {"recomputation", createRecomputationPass},
      {"weight-gathers", createWeightGathersPass},
  };
  return passes;
}

} // namespace

std::unique_ptr<Pass> createPass(const std::string& name) {
  for (const auto& [known, factory] : registry()) {
    if (known == name) return factory();
  }
  throwError(ErrorKind::InvalidOption, strCat("there is no pass '", name,
                                              "'. The passes: ", join(allPassNames(), ", "), "."));
}

std::vector<std::string> allPassNames() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : registry())
    names.push_back(name);
  return names;
}

std::vector<std::string> optionalPassNames() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : registry()) {
    if (factory()->optional()) names.push_back(name);
  }
  return names;
}

std::unique_ptr<PassPipeline> compilePipeline(const CompilerOptions& options) {
  POPSIM_ASSERT(options.gradientAccumulation >= 1, "gradientAccumulation ",
                options.gradientAccumulation, ".");
  const TrainingConfig& training = options.training;
  const bool shardsWeights = training.replicas > 1 && !training.shardedWeights.empty();
  auto pipeline = std::make_unique<PassPipeline>("compile");
  pipeline->add(createHostOverlapCheck()).add(createStageAssignmentPass());
  switch (options.program) {
  case ProgramKind::Training: {
    auto program = std::make_unique<PassPipeline>("training-program");
    program->add(createLossCheck());
    if (shardsWeights) program->add(createWeightShardingPass());
    program->add(createAutodiffPass());
    if (options.gradientAccumulation > 1) program->add(createGradientAccumulationPass());
    program->add(createRandomCountersPass());
    if (training.replicas > 1) program->add(createReplicaReductionPass());
    if (training.scalesLoss()) program->add(createLossScalingPass());
    if (training.maxGradNorm > 0.0) program->add(createGradientClippingPass());
    program->add(createOptimizerStepPass());
    pipeline->add(std::move(program));
    break;
  }
  case ProgramKind::Gradients:
    pipeline->add(createLossCheck()).add(createGradientProgramPass());
    break;
  case ProgramKind::Inference: {
    auto program = std::make_unique<PassPipeline>("inference-program");
    if (shardsWeights) program->add(createWeightShardingPass());
    program->add(createRandomCountersPass());
    pipeline->add(std::move(program));
    break;
  }
  }
  pipeline->add(createSimplifyLayoutPass())
      .add(createDeadCodeEliminationPass())
      .add(createProgramCheck())
      .add(createTaskLayoutCheck());
  auto tasks = std::make_unique<PassPipeline>("tasks");
  tasks->add(createTaskOrderPass()).add(createIpuCopiesPass());
  if (options.recomputation) tasks->add(createRecomputationPass());
  if (options.program != ProgramKind::Gradients && shardsWeights) {
    tasks->add(createWeightGathersPass());
  }
  pipeline->add(std::move(tasks));
  return pipeline;
}

void buildTrainingProgram(ir::Graph& graph, const TrainingConfig& config,
                          int64_t gradientAccumulation) {
  CompilerOptions options;
  options.program = ProgramKind::Training;
  options.training = config;
  options.gradientAccumulation = gradientAccumulation;
  const device::IpuSystemConfig system;
  PassContext context(options, system);
  const std::unique_ptr<PassPipeline> compile = compilePipeline(options);
  for (const auto& stage : compile->passes()) {
    if (stage->name() == "training-program") {
      runPipeline(static_cast<PassPipeline&>(*stage), graph, context);
      return;
    }
  }
}

} // namespace popsim::compiler
