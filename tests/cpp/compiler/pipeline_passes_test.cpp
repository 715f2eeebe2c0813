// Stage assignment, task layout and order, and inter-IPU copies on small
// graphs built by hand.

#include "common/error.h"
#include "compiler/passes/ipu_copies.h"
#include "compiler/passes/stage_assignment.h"
#include "compiler/pipeline_tasks.h"
#include "ir/graph.h"
#include "test_utils.h"

#include <gtest/gtest.h>

namespace popsim {
namespace {

using ir::Graph;
using ir::OpKind;
using ir::Value;
using testing::f32;

ir::Node* addInBlock(Graph& graph, OpKind kind, const std::vector<Value*>& inputs,
                     const std::string& block) {
  ir::Node* node = graph.addNode(kind, inputs);
  ir::Placement placement;
  placement.block = block;
  node->setPlacement(placement);
  return node;
}

// x -> relu (A) -> exp (B) -> mul with x (C): three blocks.
struct ThreeBlocks {
  Graph graph;
  Value* x = nullptr;
  ir::Node* relu = nullptr;
  ir::Node* exp = nullptr;
  ir::Node* mul = nullptr;
  ThreeBlocks() {
    x = graph.addInput("x", f32({2, 4}));
    for (const char* name : {"A", "B", "C"})
      graph.addBlock({name, -1, {}});
    relu = addInBlock(graph, OpKind::Relu, {x}, "A");
    exp = addInBlock(graph, OpKind::Exp, {relu->output()}, "B");
    mul = addInBlock(graph, OpKind::Mul, {exp->output(), x}, "C");
    graph.addOutput(mul->output());
  }
};

TEST(StageAssignmentTest, BlocksGiveNodesTheirStageAndIpu) {
  ThreeBlocks model;
  compiler::assignStages(model.graph, {{"A", 0, 0}, {"B", 1, 1}, {"C", 2, 1}});
  EXPECT_EQ(model.exp->placement().stage, 1);
  EXPECT_EQ(model.mul->placement().ipu, 1);
  EXPECT_EQ(compiler::stageCount(model.graph), 3);
  EXPECT_EQ(compiler::ipuCount(model.graph), 2);
}

TEST(StageAssignmentTest, StagesMustAscendAlongTheModel) {
  ThreeBlocks model;
  const CoreError error = testing::captureError([&] {
    compiler::assignStages(model.graph, {{"A", 1, 1}, {"B", 0, 0}, {"C", 1, 1}});
  });
  EXPECT_EQ(error.kind(), ErrorKind::Compilation);
  EXPECT_TRUE(testing::contains(error.what(), "exp (block 'B') is in stage 0 but runs after "
                                              "relu (block 'A') in stage 1"));
}

TEST(StageAssignmentTest, UnassignedBlocksAreUnknown) {
  ThreeBlocks model;
  const CoreError error = testing::captureError([&] {
    compiler::assignStages(model.graph, {{"A", 0, 0}});
  });
  // The execution strategy (strategies.py) names the unknown block to users.
  EXPECT_EQ(error.kind(), ErrorKind::Internal);
  EXPECT_TRUE(testing::contains(error.what(), "block 'B' has no stage."));
}

TEST(TaskLayoutTest, TrainingTasksInPipelineOrder) {
  ThreeBlocks model;
  compiler::assignStages(model.graph, {{"A", 0, 0}, {"B", 1, 1}, {"C", 2, 2}});
  const compiler::TaskLayout layout(model.graph, true);
  std::vector<std::string> names;
  for (const compiler::PipelineTask& task : layout.tasks())
    names.push_back(task.name());
  EXPECT_EQ(names, (std::vector<std::string>{"F0", "F1", "FB2", "B1", "B0", "U0", "U1", "U2"}));
  EXPECT_EQ(layout.pipelineLength(), 5u);
  const compiler::TaskLayout inference(model.graph, false);
  EXPECT_EQ(inference.pipelineLength(), 3u);
  EXPECT_EQ(inference.tasks().back().name(), "F2");
}

TEST(IpuCopiesTest, OneCopyPerDestinationIpu) {
  ThreeBlocks model;
  compiler::assignStages(model.graph, {{"A", 0, 0}, {"B", 1, 1}, {"C", 2, 1}});
  const compiler::TaskLayout layout(model.graph, false);
  compiler::orderNodesByTask(model.graph, layout);
  compiler::insertIpuCopies(model.graph);
  // relu's result crosses to IPU 1; x is streamed to IPU 0 (its first user)
  // and copied to IPU 1 for the mul.
  std::vector<std::string> ops;
  for (const auto& node : model.graph.nodes()) {
    ops.push_back(std::string(node->name()) + "@" + std::to_string(node->placement().ipu));
    for (const Value* input : node->inputs()) {
      if (input->producer() != nullptr && node->kind() != OpKind::IpuCopy) {
        EXPECT_EQ(input->producer()->placement().ipu, node->placement().ipu)
            << node->describe() << " reads another IPU's value";
      }
    }
  }
  EXPECT_EQ(ops,
            (std::vector<std::string>{"relu@0", "ipu_copy@1", "exp@1", "ipu_copy@1", "mul@1"}));
  EXPECT_EQ(ir::homeIpu(*model.x), 0);
}

TEST(IpuCopiesTest, ConstantsAreDuplicatedPerIpu) {
  Graph graph;
  graph.addBlock({"A", -1, {}});
  graph.addBlock({"B", -1, {}});
  Value* x = graph.addInput("x", f32({4}));
  Value* half = graph.addScalarConstant(0.5f);
  ir::Node* a = addInBlock(graph, OpKind::Mul, {x, half}, "A");
  ir::Node* b = addInBlock(graph, OpKind::Mul, {a->output(), half}, "B");
  graph.addOutput(b->output());
  compiler::assignStages(graph, {{"A", 0, 0}, {"B", 1, 1}});
  compiler::orderNodesByTask(graph, compiler::TaskLayout(graph, false));
  compiler::insertIpuCopies(graph);
  ASSERT_EQ(graph.constants().size(), 2u);
  EXPECT_NE(b->input(1), half);
  EXPECT_EQ(ir::homeIpu(*b->input(1)), 1);
}

TEST(StageAssignmentTest, WeightsSharedAcrossIpusAreRefused) {
  Graph graph;
  graph.addBlock({"A", -1, {}});
  graph.addBlock({"B", -1, {}});
  Value* x = graph.addInput("x", f32({4}));
  Value* w = graph.addWeight("tied", f32({4}), true);
  ir::Node* a = addInBlock(graph, OpKind::Mul, {x, w}, "A");
  graph.addOutput(addInBlock(graph, OpKind::Mul, {a->output(), w}, "B")->output());
  const CoreError error = testing::captureError([&] {
    compiler::assignStages(graph, {{"A", 0, 0}, {"B", 1, 1}});
  });
  EXPECT_TRUE(testing::contains(error.what(), "Weight 'tied' is used on IPU 0 by mul (block "
                                              "'A') and on IPU 1 by mul (block 'B')"));
}

} // namespace
} // namespace popsim
