#include "compiler/program_checks.h"

#include "common/check.h"
#include "compiler/passes.h"

namespace popsim::compiler {

void checkHostOverlap(const ir::Graph& graph, const CompilerOptions& options,
                      const device::IpuSystemConfig& system) {
  if (!graph.overlapsHostIo()) return;
  POPSIM_CHECK_OPTION(
      !options.pipelined(), "setExecutionStrategy",
      "Overlapped IO is not supported with poptorch.PipelinedExecution. If you are using "
      "only one IPU, please switch to poptorch.ShardedExecution. The model marks inputs "
      "or outputs with set_overlap_for_input / set_overlap_for_output, which stream "
      "beside the compute only when the stages run one at a time: use "
      "opts.setExecutionStrategy(popsim.ShardedExecution()) (or a phased execution).");
  POPSIM_CHECK_OPTION(
      system.ioTiles > 0, "TensorLocations.numIOTiles",
      "No IO tiles allocated. You must allocate at least 32 IO tiles using "
      "poptorch.Options().TensorLocations.numIOTiles. The model marks inputs or outputs "
      "with set_overlap_for_input / set_overlap_for_output, which stream through IO "
      "tiles: set aside 32 to 192 (an even number) per IPU.");
}

void checkHasLoss(const ir::Graph& graph) {
  POPSIM_CHECK(graph.loss() != nullptr, ErrorKind::Compilation,
               "the model has no loss to train or differentiate.");
}

void checkProgram(const ir::Graph& graph, const CompilerOptions& options) {
  const int64_t microBatches =
      options.deviceIterations *
      (options.program == ProgramKind::Inference ? 1 : options.gradientAccumulation);
  for (const ir::Value* input : graph.inputs()) {
    // A scalar input is a call's one micro-batch; Python refuses it, naming
    // the input, when a call has several (_compilation.py).
    POPSIM_ASSERT(input->type().rank() >= 1 || microBatches == 1, "input '", input->name(),
                  "' is a scalar but a call has ", microBatches, " micro-batches.");
  }
}

void checkTaskLayout(const TaskLayout& layout, const CompilerOptions& options,
                     const device::IpuSystemConfig& system) {
  POPSIM_CHECK_OPTION(layout.numIpus() <= system.numIpus, "Simulator.numIpus",
                      "the model's stages use ", layout.numIpus(),
                      " IPUs but the simulated system has ", system.numIpus,
                      " (Simulator.numIpus). Raise it or place the blocks on fewer IPUs.");
  if (layout.numStages() < 2 || !options.pipelined()) {
    return;
  }
  const int64_t stages = static_cast<int64_t>(layout.pipelineLength());
  if (options.program != ProgramKind::Inference) {
    POPSIM_CHECK_OPTION(
        options.gradientAccumulation >= stages, "Training.gradientAccumulation",
        "Training.gradientAccumulation must be at least the number of pipeline stages (", stages,
        ") for pipelined training, got ", options.gradientAccumulation, ". The ",
        layout.numStages(), " forward stages make ", stages,
        " pipeline stages when training: each stage but the last also runs its "
        "backward pass as a separate stage. Set opts.Training.gradientAccumulation(",
        stages, ") or more, or use popsim.ShardedExecution.");
  } else {
    POPSIM_CHECK_OPTION(options.deviceIterations >= stages, "deviceIterations",
                        "deviceIterations must be at least the number of pipeline stages (", stages,
                        ") for pipelined inference, got ", options.deviceIterations,
                        ". Set opts.deviceIterations(", stages,
                        ") or more, or use popsim.ShardedExecution.");
  }
}

std::unique_ptr<Pass> createHostOverlapCheck() {
  return std::make_unique<CheckPass>("check-host-overlap",
                                     [](const ir::Graph& graph, PassContext& context) {
                                       checkHostOverlap(graph, context.options(), context.system());
                                     });
}

std::unique_ptr<Pass> createLossCheck() {
  return std::make_unique<CheckPass>(
      "check-loss", [](const ir::Graph& graph, PassContext&) { checkHasLoss(graph); });
}

std::unique_ptr<Pass> createProgramCheck() {
  return std::make_unique<CheckPass>(
      "check-program",
      [](const ir::Graph& graph, PassContext& context) { checkProgram(graph, context.options()); });
}

std::unique_ptr<Pass> createTaskLayoutCheck() {
  return std::make_unique<CheckPass>(
      "check-tasks", [](const ir::Graph& graph, PassContext& context) {
        checkTaskLayout(context.layout(graph), context.options(), context.system());
      });
}

} // namespace popsim::compiler
