// Dead code elimination: unused chains go, everything that feeds an output
// stays, and weights and constants nothing uses any more are dropped.

#include "compiler/pass_manager.h"
#include "compiler/passes.h"
#include "compiler/run_pass.h"
#include "ir/graph.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "test_utils.h"

#include <gtest/gtest.h>

namespace popsim {
namespace {

using ir::Graph;
using ir::OpKind;
using ir::Value;
using testing::f32;
using testing::kindsOf;

void runDeadCodeElimination(Graph& graph) {
  auto pass = compiler::createDeadCodeEliminationPass();
  EXPECT_EQ(pass->name(), "dead-code-elimination");
  testing::runPass(*pass, graph);
  EXPECT_EQ(ir::findGraphProblems(graph), std::vector<std::string>{});
}

TEST(DeadCodeEliminationTest, RemovesUnusedChainsAndTheirLeaves) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 4}));
  Value* w = graph.addWeight("fc.weight", f32({3, 4}), true);
  Value* deadWeight = graph.addWeight("head.weight", f32({5, 3}), true);
  Value* deadConstant = graph.addScalarConstant(3.0f);
  Value* liveConstant = graph.addScalarConstant(0.5f);
  Value* h = graph.apply(OpKind::Linear, {x, w});
  // A dead chain that starts from a live value and uses its own leaves.
  Value* d1 = graph.apply(OpKind::Linear, {h, deadWeight});
  Value* d2 = graph.apply(OpKind::Mul, {d1, deadConstant});
  graph.apply(OpKind::Softmax, {d2}, {{"dim", int64_t{1}}});
  Value* out = graph.apply(OpKind::Mul, {graph.apply(OpKind::Relu, {h}), liveConstant});
  graph.addOutput(out);

  runDeadCodeElimination(graph);

  EXPECT_EQ(kindsOf(graph), (std::vector<OpKind>{OpKind::Linear, OpKind::Relu, OpKind::Mul}));
  EXPECT_EQ(graph.weights(), (std::vector<Value*>{w}));
  EXPECT_EQ(graph.constants(), (std::vector<Value*>{liveConstant}));
  EXPECT_EQ(graph.outputs(), (std::vector<Value*>{out}));
  EXPECT_EQ(h->users().size(), 1u);
  EXPECT_EQ(ir::printGraph(graph), R"(graph(%x: f32[2,4]) {
  weights:
    @fc.weight: f32[3,4]
  constants:
    $c0: f32[] = 0.5
  %0: f32[2,3] = linear(%x, @fc.weight)
  %1: f32[2,3] = relu(%0)
  %2: f32[2,3] = mul(%1, $c0)
  return (%2)
}
)");
}

TEST(DeadCodeEliminationTest, KeepsGraphOutputsEvenWithoutUsersAndAllInputs) {
  Graph graph;
  Value* x = graph.addInput("x", f32({4}));
  Value* unused = graph.addInput("unused", f32({4}));
  Value* a = graph.apply(OpKind::Exp, {x});
  Value* b = graph.apply(OpKind::Tanh, {a});
  graph.apply(OpKind::Sigmoid, {a}); // dead
  graph.addOutput(a);                // a is also used by b: kept either way
  graph.addOutput(b);

  runDeadCodeElimination(graph);

  EXPECT_EQ(kindsOf(graph), (std::vector<OpKind>{OpKind::Exp, OpKind::Tanh}));
  EXPECT_EQ(graph.inputs(), (std::vector<Value*>{x, unused}));
  EXPECT_EQ(a->users().size(), 1u);
}

TEST(DeadCodeEliminationTest, KeepsWeightsAndConstantsReturnedDirectly) {
  Graph graph;
  graph.addInput("x", f32({4}));
  Value* w = graph.addWeight("w", f32({4}), true);
  Value* c = graph.addScalarConstant(1.0f);
  graph.addWeight("unused", f32({4}), false);
  graph.addOutput(w);
  graph.addOutput(c);

  runDeadCodeElimination(graph);

  EXPECT_EQ(graph.weights(), (std::vector<Value*>{w}));
  EXPECT_EQ(graph.constants(), (std::vector<Value*>{c}));
  EXPECT_TRUE(graph.nodes().empty());
}

TEST(DeadCodeEliminationTest, NothingToRemoveLeavesTheGraphAsItWas) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 3}));
  Value* w = graph.addWeight("w", f32({3}), true);
  graph.addOutput(graph.apply(OpKind::Add, {graph.apply(OpKind::Relu, {x}), w}));
  const std::string before = ir::printGraph(graph);
  runDeadCodeElimination(graph);
  EXPECT_EQ(ir::printGraph(graph), before);
}

TEST(DeadCodeEliminationTest, AGraphWithNoOutputsBecomesEmpty) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2}));
  Value* w = graph.addWeight("w", f32({2}), true);
  graph.apply(OpKind::Add, {graph.apply(OpKind::Exp, {x}), w});
  runDeadCodeElimination(graph);
  EXPECT_TRUE(graph.nodes().empty());
  EXPECT_TRUE(graph.weights().empty());
  EXPECT_TRUE(x->users().empty());
}

TEST(DeadCodeEliminationTest, RunsUnderThePassManager) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2}));
  graph.apply(OpKind::Exp, {x});
  graph.addOutput(graph.apply(OpKind::Relu, {x}));
  std::vector<std::unique_ptr<compiler::Pass>> passes;
  passes.push_back(compiler::createDeadCodeEliminationPass());
  testing::runPasses(std::move(passes), graph);
  EXPECT_EQ(kindsOf(graph), (std::vector<OpKind>{OpKind::Relu}));
}

} // namespace
} // namespace popsim
