#pragma once

#include "compiler/compiler_options.h"
#include "compiler/program.h"
#include "device/ipu_system.h"
#include "ir/graph.h"

namespace popsim::compiler {

// Compiles a copy of `imported` for `system` through compilePipeline(options)
// (passes.h: stage assignment, the program's passes, clean-up, checks, then
// the passes over tasks). Every transformation is verified after it changed
// the graph and written to POPSIM_DUMP_IR when that is set;
// POPSIM_DISABLE_PASSES switches optional passes off by name. Returns the
// program with its task layout and schedule.
Program compileProgram(const ir::Graph& imported, const CompilerOptions& options,
                       const device::IpuSystemConfig& system);

} // namespace popsim::compiler
