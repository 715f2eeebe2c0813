#include "compiler/compile_graph.h"

#include "common/logging.h"
#include "compiler/ir_dump.h"
#include "compiler/pass_manager.h"
#include "compiler/passes.h"
#include "compiler/program_checks.h"
#include "ir/printer.h"

namespace popsim::compiler {

CompiledGraph compileGraph(const ir::Graph& imported, const CompilerOptions& options) {
  CompiledGraph compiled{imported.clone(), {}};
  ir::Graph& graph = *compiled.graph;
  compiler::IrDump dump = compiler::IrDump::fromEnvironment();
  const bool training = options.program != ProgramKind::Inference;
  checkHostOverlap(graph, options);

  compiler::PassManager(&dump).add(compiler::createStageAssignmentPass(options.stages)).run(graph);
  compiler::PassManager program(&dump);
  if (training) {
    checkHasLoss(graph);
    program.add(options.program == ProgramKind::Training
                    ? compiler::createTrainingProgramPass(options.training)
                    : compiler::createGradientProgramPass());
  } else {
    program.add(compiler::createInferenceProgramPass(options.training));
  }
  program.add(compiler::createSimplifyLayoutPass()).add(compiler::createDeadCodeEliminationPass());
  program.run(graph);
  checkProgram(graph, options);

  compiled.layout = compiler::TaskLayout(graph, training);
  checkTaskLayout(compiled.layout, options);
  compiler::PassManager tasks(&dump);
  tasks.add(compiler::createTaskOrderPass(compiled.layout)).add(compiler::createIpuCopiesPass());
  if (options.recomputation) {
    tasks.add(compiler::createRecomputationPass(compiled.layout));
  }
  if (options.program != ProgramKind::Gradients && options.training.replicas > 1 &&
      !options.training.shardedWeights.empty()) {
    tasks.add(compiler::createWeightGatherPass(compiled.layout));
  }
  tasks.run(graph);
  POPSIM_LOG(Debug) << "program after passes:\n" << ir::printGraph(graph);
  return compiled;
}

} // namespace popsim::compiler
