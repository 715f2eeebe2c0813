#pragma once

#include "ir/graph.h"
#include "test_utils.h"

#include <memory>

namespace popsim::testing {

// x[8,16] -> linear(a) -> relu | -> linear(b) -> softmax, the two halves in
// blocks A and B: the smallest model with a pipeline.
inline std::unique_ptr<ir::Graph> twoBlocks() {
  auto graph = std::make_unique<ir::Graph>();
  ir::Value* x = graph->addInput("x", f32({8, 16}));
  ir::Value* wa = graph->addWeight("a.weight", f32({32, 16}), true);
  ir::Value* wb = graph->addWeight("b.weight", f32({4, 32}), true);
  graph->addBlock({"A", -1, {}});
  graph->addBlock({"B", -1, {}});
  ir::Value* h = inBlock(graph->apply(ir::OpKind::Linear, {x, wa}), "A");
  h = inBlock(graph->apply(ir::OpKind::Relu, {h}), "A");
  ir::Value* y = inBlock(graph->apply(ir::OpKind::Linear, {h, wb}), "B");
  graph->addOutput(inBlock(graph->apply(ir::OpKind::Softmax, {y}, {{"dim", int64_t{1}}}), "B"));
  return graph;
}

} // namespace popsim::testing
