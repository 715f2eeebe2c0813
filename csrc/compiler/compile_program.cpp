#include "compiler/compile_program.h"

#include "common/logging.h"
#include "compiler/passes.h"
#include "ir/printer.h"

namespace popsim::compiler {

Program compileProgram(const ir::Graph& imported, const CompilerOptions& options,
                       const device::IpuSystemConfig& system) {
  std::unique_ptr<ir::Graph> graph = imported.clone();
  PassContext context(options, system);
  context.setDump(IrDump::fromEnvironment());
  context.setDisabled(disabledPassesFromEnvironment());
  context.setChecksText(textChecksFromEnvironment());
  const std::unique_ptr<PassPipeline> pipeline = compilePipeline(options);
  POPSIM_LOG(Debug) << "compile pipeline:\n" << pipeline->describe();
  runPipeline(*pipeline, *graph, context);
  POPSIM_LOG(Debug) << "program after passes:\n" << ir::printGraph(*graph);
  return programOf(std::move(graph), options);
}

} // namespace popsim::compiler
