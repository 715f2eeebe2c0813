#include "compiler/compile_graph.h"

#include "common/logging.h"
#include "compiler/program_checks.h"
#include "ir/printer.h"
#include "passes/ir_dump.h"
#include "passes/pass_manager.h"
#include "passes/passes.h"

namespace popsim::compiler {

CompiledGraph compileGraph(const ir::Graph& imported, const CompilerOptions& options) {
  CompiledGraph compiled{imported.clone(), {}};
  ir::Graph& graph = *compiled.graph;
  passes::IrDump dump = passes::IrDump::fromEnvironment();
  const bool training = options.program != ProgramKind::Inference;
  checkHostOverlap(graph, options);

  passes::PassManager(&dump).add(passes::createStageAssignmentPass(options.stages)).run(graph);
  passes::PassManager program(&dump);
  if (training) {
    checkHasLoss(graph);
    program.add(options.program == ProgramKind::Training
                    ? passes::createTrainingProgramPass(options.training)
                    : passes::createGradientProgramPass());
  } else {
    program.add(passes::createInferenceProgramPass(options.training));
  }
  program.add(passes::createSimplifyLayoutPass()).add(passes::createDeadCodeEliminationPass());
  program.run(graph);
  checkProgram(graph, options);

  compiled.layout = passes::TaskLayout(graph, training);
  checkTaskLayout(compiled.layout, options);
  passes::PassManager tasks(&dump);
  tasks.add(passes::createTaskOrderPass(compiled.layout)).add(passes::createIpuCopiesPass());
  if (options.recomputation) {
    tasks.add(passes::createRecomputationPass(compiled.layout));
  }
  if (options.program != ProgramKind::Gradients && options.training.replicas > 1 &&
      !options.training.shardedWeights.empty()) {
    tasks.add(passes::createWeightGatherPass(compiled.layout));
  }
  tasks.run(graph);
  POPSIM_LOG(Debug) << "program after passes:\n" << ir::printGraph(graph);
  return compiled;
}

} // namespace popsim::compiler
