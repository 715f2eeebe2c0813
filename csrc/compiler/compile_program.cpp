#include "compiler/compile_program.h"

#include "common/logging.h"
#include "compiler/ir_dump.h"
#include "compiler/pass_manager.h"
#include "compiler/passes.h"
#include "compiler/program_checks.h"
#include "ir/printer.h"

namespace popsim::compiler {

Program compileProgram(const ir::Graph& imported, const CompilerOptions& options,
                       const device::IpuSystemConfig& system) {
  std::unique_ptr<ir::Graph> owned = imported.clone();
  ir::Graph& graph = *owned;
  IrDump dump = IrDump::fromEnvironment();
  const bool training = options.program != ProgramKind::Inference;
  checkHostOverlap(graph, options, system);

  PassManager(&dump).add(createStageAssignmentPass(options.stages)).run(graph);
  PassManager program(&dump);
  if (training) {
    checkHasLoss(graph);
    program.add(options.program == ProgramKind::Training
                    ? createTrainingProgramPass(options.training, options.gradientAccumulation)
                    : createGradientProgramPass());
  } else {
    program.add(createInferenceProgramPass(options.training));
  }
  program.add(createSimplifyLayoutPass()).add(createDeadCodeEliminationPass());
  program.run(graph);
  checkProgram(graph, options);

  const TaskLayout layout(graph, training);
  checkTaskLayout(layout, options, system);
  PassManager tasks(&dump);
  tasks.add(createTaskOrderPass(layout)).add(createIpuCopiesPass());
  if (options.recomputation) {
    tasks.add(createRecomputationPass(layout));
  }
  if (options.program != ProgramKind::Gradients && options.training.replicas > 1 &&
      !options.training.shardedWeights.empty()) {
    tasks.add(createWeightGatherPass(layout));
  }
  tasks.run(graph);
  POPSIM_LOG(Debug) << "program after passes:\n" << ir::printGraph(graph);
  return programOf(std::move(owned), options);
}

} // namespace popsim::compiler
