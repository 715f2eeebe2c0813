#pragma once

#include "compiler/compiler_options.h"
#include "compiler/pipeline_tasks.h"
#include "device/ipu_system.h"
#include "ir/graph.h"

namespace popsim::compiler {

// The checks between the compile steps, on what a model and its options ask
// for; each error says what to change.

// Inputs and outputs marked to overlap with compute stream through IO tiles,
// which need some set aside and an execution that is not pipelined
// (PopTorch's rules, with its wording).
void checkHostOverlap(const ir::Graph& graph, const CompilerOptions& options,
                      const device::IpuSystemConfig& system);

// Training and gradient programs need a loss.
void checkHasLoss(const ir::Graph& graph);

// After optimisation: every input has a batch dimension to split into device
// iterations (an internal check: Python refuses scalar inputs). A program may
// return nothing, as PopTorch's: it may still update buffers.
void checkProgram(const ir::Graph& graph, const CompilerOptions& options);

// The stages fit the simulated system, and a pipeline gets enough
// micro-batches to fill every stage (PopTorch's rule).
void checkTaskLayout(const TaskLayout& layout, const CompilerOptions& options,
                     const device::IpuSystemConfig& system);

} // namespace popsim::compiler
