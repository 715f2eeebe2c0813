#pragma once

#include "compiler/passes/stage_assignment.h"
#include "compiler/pipeline_tasks.h"
#include "ir/graph.h"
#include "test_utils.h"

#include <string>
#include <vector>

namespace popsim::testing {

// The task layout of a chain of relus in `stages` blocks S0, S1, ..., one
// stage per IPU, built into `graph`.
inline compiler::TaskLayout stagedLayout(ir::Graph& graph, int64_t stages, bool training) {
  ir::Value* x = graph.addInput("x", f32({4}));
  std::vector<compiler::StageAssignment> assignment;
  for (int64_t s = 0; s < stages; ++s) {
    const std::string name = "S" + std::to_string(s);
    graph.addBlock({name, -1, {}});
    ir::Node* node = graph.addNode(ir::OpKind::Relu, {x});
    ir::Placement placement;
    placement.block = name;
    node->setPlacement(placement);
    x = node->output();
    assignment.push_back({name, s, s});
  }
  graph.addOutput(x);
  compiler::assignStages(graph, assignment);
  return compiler::TaskLayout(graph, training);
}

} // namespace popsim::testing
