#pragma once

#include "clock/simulated_clock.h"
#include "compiler/program.h"
#include "costs/cost_table.h"
#include "memory/program_memory.h"
#include "runtime/compile_options.h"

#include <memory>
#include <string_view>

namespace popsim::runtime {

// A program on the simulated machine without its values: the compiler's
// program, its memory plan, its cost table and one call replayed on the
// clock. Every call of a program takes the same simulated time, so this is
// all a sizing needs; running it binds kernels to the plan (Executable).
struct Simulation {
  CompileOptions options;
  compiler::Program program;
  memory::ProgramMemory memory;
  costs::CostTable costs;
  clock::SimulatedCall call;
};

// The stages in order: compile `graph` (compiler::compileProgram), plan its
// memory and check that it fits (OutOfMemoryError naming the IPU), build its
// cost table, and replay a call on the clock.
Simulation simulate(const ir::Graph& graph, const CompileOptions& options);

// The same from a program serializeGraph() wrote (executable caching,
// compileAndExport), without the compiler: `options` must be those it was
// compiled with (the Python API keys its files by them). A damaged file is
// an InvalidFile error.
Simulation simulateSerialized(std::string_view program, const CompileOptions& options);

} // namespace popsim::runtime
