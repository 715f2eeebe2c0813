#include "runtime/simulation.h"

#include "clock/call_setup.h"
#include "common/check.h"
#include "compiler/compile_program.h"
#include "ir/serialization.h"

namespace popsim::runtime {
namespace {

// Everything after the compiler.
Simulation simulateProgram(compiler::Program program, const CompileOptions& options) {
  Simulation simulation{options, std::move(program), {}, {}, {}};
  simulation.memory = memory::planProgramMemory(simulation.program, options.memory, options.system);
  if (!options.allowOverCapacity) memory::checkMemoryFits(simulation.memory.report, options.system);
  simulation.costs = costs::buildCostTable(simulation.program, simulation.memory, options.system);
  simulation.call = clock::simulateCall(
      clock::callSetup(simulation.program, simulation.memory, simulation.costs, options.clock));
  return simulation;
}

} // namespace

void CompileOptions::validate() const {
  system.validate();
  compiler.output.validate(compiler.microBatchesPerCall());
  // The Python API validates what users set (popsim.Options); these hold
  // for every options object it builds.
  POPSIM_ASSERT(compiler.deviceIterations >= 1 && compiler.gradientAccumulation >= 1,
                "deviceIterations ", compiler.deviceIterations, ", gradientAccumulation ",
                compiler.gradientAccumulation, ".");
  memory.validate(system);
  POPSIM_ASSERT(!allowOverCapacity || kernels.costOnly,
                "a program over its IPUs' capacity can only be compiled cost-only.");
}

Simulation simulate(const ir::Graph& graph, const CompileOptions& options) {
  options.validate();
  return simulateProgram(compiler::compileProgram(graph, options.compiler, options.system),
                         options);
}

Simulation simulateSerialized(std::string_view bytes, const CompileOptions& options) {
  options.validate();
  compiler::Program program = compiler::programOf(ir::deserializeGraph(bytes), options.compiler);
  POPSIM_CHECK(program.layout.numIpus() <= options.system.numIpus, ErrorKind::InvalidFile,
               "The compiled program runs on ", program.layout.numIpus(),
               " IPUs; the options give ", options.system.numIpus, ". Compile the model again.");
  return simulateProgram(std::move(program), options);
}

} // namespace popsim::runtime
