#pragma once

#include "compiler/compiler_options.h"
#include "compiler/pipeline_tasks.h"
#include "ir/graph.h"

#include <memory>

namespace popsim::compiler {

// The optimised program and its pipeline tasks: what the runtime binds to
// memory and kernels.
struct CompiledGraph {
  std::unique_ptr<ir::Graph> graph;
  compiler::TaskLayout layout;
};

// The compile sequence, in order, on a copy of `imported`; every step is a
// pass under a PassManager, which verifies the graph after it (and writes it
// to POPSIM_DUMP_IR when that is set):
// 1. stage-assignment: each node's stage and IPU from its block;
// 2. training-program or gradient-program (training and gradients only);
// 3. simplify-layout and dead-code-elimination;
// 4. the task layout (an analysis) and the checks on the program it allows;
// 5. task-order, then ipu-copies, then recomputation (when asked for).
CompiledGraph compileGraph(const ir::Graph& imported, const CompilerOptions& options);

} // namespace popsim::compiler
