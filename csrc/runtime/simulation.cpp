#include "runtime/simulation.h"

#include "clock/call_setup.h"
#include "common/check.h"
#include "common/strings.h"
#include "compiler/compile_program.h"
#include "compiler/program_checks.h"
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

[[noreturn]] void refuseDamagedProgram(const char* what) {
  throwError(ErrorKind::InvalidFile,
             strCat("The compiled program is damaged or was not written by popsim: it breaks what "
                    "a compiled program holds (",
                    what, ")."));
}

} // namespace

void CompileOptions::validate() const {
  system.validate();
  compiler.output.validate(compiler.deviceIterations);
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
  std::unique_ptr<ir::Graph> graph = ir::deserializeGraph(bytes);
  // The reader checked the graph itself (indices, types, stages, IPUs); what
  // the later stages assume of a compiled program beyond that (every
  // cross-IPU value copied, stages in order) is not re-derived here. A
  // program that breaks it, which only a damaged or crafted file can hold, is
  // refused as such: an internal failure while loading is a bad file, not a
  // popsim bug. This is no memory-safety net: the reader fuzz test runs
  // loading under the sanitizers to find what the reader must check.
  try {
    compiler::checkProgram(*graph, options.compiler);
    compiler::Program program = compiler::programOf(std::move(graph), options.compiler);
    POPSIM_CHECK(program.layout.numIpus() <= options.system.numIpus, ErrorKind::InvalidFile,
                 "The compiled program runs on ", program.layout.numIpus(),
                 " IPUs; the options give ", options.system.numIpus, ". Compile the model again.");
    compiler::checkTaskLayout(program.layout, options.compiler, options.system);
    return simulateProgram(std::move(program), options);
  } catch (const CoreError& error) {
    if (error.kind() != ErrorKind::Internal) throw;
    refuseDamagedProgram(error.what());
  } catch (const std::logic_error& error) { // std::out_of_range and the like
    refuseDamagedProgram(error.what());
  }
}

} // namespace popsim::runtime
