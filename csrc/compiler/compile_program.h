#pragma once

#include "compiler/compiler_options.h"
#include "compiler/program.h"
#include "device/ipu_system.h"
#include "ir/graph.h"

namespace popsim::compiler {

// The compile sequence, in order, on a copy of `imported`; every step is a
// pass under a PassManager, which verifies the graph after it (and writes it
// to POPSIM_DUMP_IR when that is set):
// 1. stage-assignment: each node's stage and IPU from its block;
// 2. training-program or gradient-program (training and gradients only);
// 3. simplify-layout and dead-code-elimination;
// 4. the task layout (an analysis) and the checks on the program it allows
//    (its stages fit `system`);
// 5. task-order, then ipu-copies, then recomputation (when asked for).
// Returns the program with its layout and schedule.
Program compileProgram(const ir::Graph& imported, const CompilerOptions& options,
                       const device::IpuSystemConfig& system);

} // namespace popsim::compiler
