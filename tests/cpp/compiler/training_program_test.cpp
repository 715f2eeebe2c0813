// The training program: the state it creates (named as ir/state_names.h
// says), accumulation, and one fused update per trained parameter in the
// Update phase. Numbers are checked end to end by
// runtime/training_executable_test.cpp and against PyTorch by the Python tests.

#include "common/error.h"
#include "compiler/passes.h"
#include "compiler/passes/ipu_copies.h"
#include "compiler/pipeline_tasks.h"
#include "compiler/training/weight_sharding.h"
#include "ir/graph.h"
#include "ir/verifier.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace popsim {
namespace {

using compiler::OptimizerKind;
using compiler::TrainingConfig;
using ir::Graph;
using ir::OpKind;
using ir::Phase;
using ir::Value;
using testing::f32;

// loss = mean(relu(x W^T + b)); `frozen` is a weight the loss does not use.
std::unique_ptr<Graph> buildRegression() {
  auto graph = std::make_unique<Graph>();
  Value* x = graph->addInput("x", f32({2, 4}));
  Value* w = graph->addWeight("fc.weight", f32({3, 4}), true);
  Value* b = graph->addWeight("fc.bias", f32({3}), true);
  graph->addWeight("frozen", f32({3}), true);
  Value* r = graph->apply(OpKind::Relu, {graph->apply(OpKind::Linear, {x, w, b})});
  Value* loss = graph->apply(OpKind::ReduceMean, {r},
                             {{"dims", std::vector<int64_t>{0, 1}}, {"keepdim", false}});
  graph->addOutput(loss);
  graph->setLoss(loss);
  return graph;
}

TrainingConfig configFor(OptimizerKind optimizer) {
  TrainingConfig config;
  config.optimizer = optimizer;
  config.groups.push_back({{"fc.weight", "fc.bias", "frozen"}});
  return config;
}

std::vector<std::string> stateNames(const Graph& graph) {
  std::vector<std::string> names;
  for (const Value* state : graph.states())
    names.push_back(state->name());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<const ir::Node*> nodesOf(const Graph& graph, OpKind kind) {
  std::vector<const ir::Node*> found;
  for (const auto& node : graph.nodes()) {
    if (node->kind() == kind) found.push_back(node.get());
  }
  return found;
}

TEST(TrainingProgramTest, SgdWithoutMomentumKeepsOnlyItsHyperParameters) {
  auto graph = buildRegression();
  compiler::buildTrainingProgram(*graph, configFor(OptimizerKind::Sgd), 1);

  EXPECT_EQ(stateNames(*graph), std::vector<std::string>{"optimizer/group0/hyper"});
  const auto updates = nodesOf(*graph, OpKind::SgdUpdate);
  ASSERT_EQ(updates.size(), 2u); // "frozen" has no gradient, so no update, as in PyTorch
  for (const ir::Node* update : updates) {
    EXPECT_EQ(update->placement().phase, Phase::Update);
  }
  EXPECT_EQ(updates[0]->input(0), graph->findWeight("fc.weight"));
  EXPECT_EQ(updates[1]->input(0), graph->findWeight("fc.bias"));
  EXPECT_EQ(ir::findGraphProblems(*graph), std::vector<std::string>{});
}

TEST(TrainingProgramTest, SgdWithMomentumKeepsABufferAndAStepCount) {
  auto graph = buildRegression();
  TrainingConfig config = configFor(OptimizerKind::Sgd);
  config.groups[0].hasMomentum = true;
  compiler::buildTrainingProgram(*graph, config, 1);

  EXPECT_EQ(stateNames(*graph),
            (std::vector<std::string>{"fc.bias/momentum_buffer", "fc.weight/momentum_buffer",
                                      "optimizer/group0/hyper", "optimizer/group0/step"}));
}

TEST(TrainingProgramTest, AdamKeepsMomentsPerParameterAndOneStepPerGroup) {
  auto graph = buildRegression();
  compiler::buildTrainingProgram(*graph, configFor(OptimizerKind::AdamW), 1);

  EXPECT_EQ(stateNames(*graph),
            (std::vector<std::string>{"fc.bias/exp_avg", "fc.bias/exp_avg_sq", "fc.weight/exp_avg",
                                      "fc.weight/exp_avg_sq", "optimizer/group0/hyper",
                                      "optimizer/group0/step"}));
  const auto updates = nodesOf(*graph, OpKind::AdamUpdate);
  ASSERT_EQ(updates.size(), 2u);
  EXPECT_TRUE(updates[0]->attrs().getBool("decoupled_weight_decay"));
  EXPECT_EQ(graph->findState("optimizer/group0/hyper")->type(),
            (ir::TensorType{ir::DType::Float64, {6}}));
}

TEST(TrainingProgramTest, AccumulationSumsEachMicroBatchAndClearsAfterTheStep) {
  auto graph = buildRegression();
  compiler::buildTrainingProgram(*graph, configFor(OptimizerKind::Sgd), 4);

  EXPECT_EQ(stateNames(*graph),
            (std::vector<std::string>{"fc.bias/accumulator", "fc.weight/accumulator",
                                      "optimizer/group0/hyper"}));
  const auto accumulates = nodesOf(*graph, OpKind::Accumulate);
  const auto fills = nodesOf(*graph, OpKind::Fill);
  ASSERT_EQ(accumulates.size(), 2u);
  ASSERT_EQ(fills.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    // Accumulation runs with every micro-batch; the update reads the
    // accumulator, then clears it, once per step.
    EXPECT_EQ(accumulates[i]->placement().phase, Phase::Backward);
    EXPECT_EQ(fills[i]->placement().phase, Phase::Update);
    EXPECT_EQ(fills[i]->input(0), accumulates[i]->input(0));
  }
  EXPECT_EQ(nodesOf(*graph, OpKind::SgdUpdate)[0]->input(1), accumulates[0]->input(0));
}

TEST(TrainingProgramTest, ParameterGroupsGetTheirOwnHyperParameters) {
  auto graph = buildRegression();
  TrainingConfig config = configFor(OptimizerKind::Rmsprop);
  config.groups = {{{"fc.weight"}}, {{"fc.bias"}, true, false, false, true}};
  compiler::buildTrainingProgram(*graph, config, 1);

  EXPECT_EQ(stateNames(*graph),
            (std::vector<std::string>{"fc.bias/grad_avg", "fc.bias/momentum_buffer",
                                      "fc.bias/square_avg", "fc.weight/square_avg",
                                      "optimizer/group0/hyper", "optimizer/group0/step",
                                      "optimizer/group1/hyper", "optimizer/group1/step"}));
}

// A sharded weight is stored as this replica's shard: the forward pass reads
// it gathered, its gradient is the gathered weight's, reduce-scattered, and
// the update writes the stored shard. Stage 0's backward task reads fc2's
// weight again (fc1's output gradient) and gathers it itself rather than
// keep the forward task's whole weight until then.
TEST(TrainingProgramTest, ShardedWeightsAreStoredAsShardsAndGatheredPerTask) {
  auto graph = std::make_unique<Graph>();
  Value* x = graph->addInput("x", f32({2, 4}));
  Value* w1 = graph->addWeight("fc1.weight", f32({5, 4}), true);
  Value* w2 = graph->addWeight("fc2.weight", f32({3, 5}), true);
  Value* w3 = graph->addWeight("fc3.weight", f32({2, 3}), true);
  const auto place = [&](ir::Node* node, int64_t stage) {
    node->setPlacement({"B" + std::to_string(stage), stage, stage, Phase::Forward});
    return node->output();
  };
  Value* h1 = place(graph->addNode(OpKind::Linear, {x, w1}), 0);
  Value* h2 = place(graph->addNode(OpKind::Linear, {h1, w2}), 0);
  Value* h3 = place(graph->addNode(OpKind::Linear, {h2, w3}), 1);
  Value* loss = place(graph->addNode(OpKind::ReduceMean, {h3},
                                     {{"dims", std::vector<int64_t>{0, 1}}, {"keepdim", false}}),
                      1);
  graph->addOutput(loss);
  graph->setLoss(loss);
  TrainingConfig config = configFor(OptimizerKind::Sgd);
  config.groups = {{{"fc1.weight", "fc2.weight", "fc3.weight"}}};
  config.replicas = 4;
  config.systemIpus = 8;
  config.shardedParameters = {"fc2.weight"};
  config.shardedWeights = {"fc2.weight"};
  compiler::buildTrainingProgram(*graph, config, 1);

  const Value* shard = graph->findWeight("fc2.weight");
  EXPECT_EQ(shard->type(), f32({4})); // ceil(15 / 4)
  EXPECT_EQ(graph->findWeight("fc1.weight")->type(), f32({5, 4}));
  auto gathers = nodesOf(*graph, OpKind::ReplicaAllGather);
  ASSERT_EQ(gathers.size(), 1u);
  EXPECT_EQ(gathers[0]->input(0), shard);
  EXPECT_EQ(gathers[0]->output()->type(), f32({3, 5}));
  const auto scatters = nodesOf(*graph, OpKind::ReplicaReduceScatter);
  ASSERT_EQ(scatters.size(), 1u);
  for (const ir::Node* update : nodesOf(*graph, OpKind::SgdUpdate)) {
    if (update->input(0) != shard) continue;
    EXPECT_EQ(update->input(1), scatters[0]->output());
  }
  EXPECT_EQ(nodesOf(*graph, OpKind::ReplicaAllReduce).size(), 2u); // fc1's and fc3's gradients

  const compiler::TaskLayout layout(*graph, true);
  compiler::orderNodesByTask(*graph, layout);
  compiler::insertIpuCopies(*graph);
  compiler::gatherShardedWeightsPerTask(*graph, layout);
  gathers = nodesOf(*graph, OpKind::ReplicaAllGather);
  ASSERT_EQ(gathers.size(), 2u);
  EXPECT_EQ(layout.tasks()[layout.taskOf(*gathers[0])].name(), "F0");
  EXPECT_EQ(layout.tasks()[layout.taskOf(*gathers[1])].name(), "B0");
  EXPECT_EQ(gathers[1]->input(0), shard);
  EXPECT_EQ(gathers[1]->attrs().getString("key"), "fc2.weight/gather@B0");
  for (const ir::Node* gather : gathers) {
    for (const ir::Node* reader : gather->output()->users())
      EXPECT_EQ(layout.taskOf(*reader), layout.taskOf(*gather)) << reader->describe();
  }
  EXPECT_EQ(ir::findGraphProblems(*graph), std::vector<std::string>{});
}

// Python validates user options (tests/python/test_options.py); C++ asserts.
TEST(TrainingProgramTest, AccumulationBelowOneBreaksAnInvariant) {
  auto graph = buildRegression();
  const CoreError error = testing::captureError(
      [&] { compiler::buildTrainingProgram(*graph, configFor(OptimizerKind::Sgd), 0); });
  EXPECT_EQ(error.kind(), ErrorKind::Internal);
  EXPECT_TRUE(testing::contains(error.what(), "gradientAccumulation 0."));
}

} // namespace
} // namespace popsim
