#pragma once

#include "ir/graph.h"

#include <string>
#include <vector>

namespace popsim::compiler {

// Where one of the model's blocks runs: its pipeline stage and IPU.
struct StageAssignment {
  std::string block;
  int64_t stage = 0;
  int64_t ipu = 0;
};

// Sets the stage and IPU of every node from its block (all of a graph's
// blocks must be assigned; a graph without blocks stays on stage 0, IPU 0,
// and with no assignments at all, nodes keep the placement they have),
// then checks the rules of a pipeline, naming the ops and blocks at fault
// (returns whether a placement changed):
// - stages ascend in the order the model runs its ops;
// - a weight is used on one IPU only (layers sharing weights share an IPU).
bool assignStages(ir::Graph& graph, const std::vector<StageAssignment>& stages);

// Stages and IPUs in use: max + 1 over the nodes (1 for an empty graph).
int64_t stageCount(const ir::Graph& graph);
int64_t ipuCount(const ir::Graph& graph);

} // namespace popsim::compiler
