#pragma once

#include "compiler/pipeline_tasks.h"
#include "ir/graph.h"

namespace popsim::compiler {

// Trades time for memory in pipelined training: the backward task of each
// stage but the last recomputes the forward values it needs from the stage's
// inputs, so only those inputs are stashed between a micro-batch's forward and
// backward passes instead of every activation the gradients read.
// - Recomputed: the forward ops of the stage that lead from its inputs to
//   values its backward pass reads, cloned at the start of the backward task.
// - Kept (stashed) instead: stage inputs (inter-IPU copies, graph inputs) and
//   outputs of ops that draw random numbers (dropout masks cannot be drawn
//   twice) or write state, and the values the user marked with
//   recomputation_checkpoint (recomputation restarts from them).
// Every recomputed op is deterministic, so results are unchanged bit for bit.
// Runs on a graph ordered by task with its inter-IPU copies inserted.
void recomputeStages(ir::Graph& graph, const TaskLayout& layout);

} // namespace popsim::compiler
