// Layout simplification (followed by dead code elimination, as in the
// compiler): layout no-ops disappear, reshape chains fold, real layout
// changes stay, and the graph stays valid throughout.

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

using ir::Attributes;
using ir::Graph;
using ir::OpKind;
using ir::Value;
using testing::f32;
using testing::kindsOf;

Attributes shape(std::vector<int64_t> dims) { return {{"shape", dims}}; }

Attributes perm(std::vector<int64_t> order) { return {{"perm", order}}; }

Attributes slice(int64_t dim, int64_t start, int64_t end, int64_t step) {
  return {{"dim", dim}, {"start", start}, {"end", end}, {"step", step}};
}

Attributes affine(double scale, double shift) { return {{"scale", scale}, {"shift", shift}}; }

// Simplify, check validity, then remove what became dead and check again.
void simplify(Graph& graph) {
  auto pass = compiler::createSimplifyLayoutPass();
  EXPECT_EQ(pass->name(), "simplify-layout");
  testing::runPass(*pass, graph);
  EXPECT_EQ(ir::findGraphProblems(graph), std::vector<std::string>{});
  testing::runPass(*compiler::createDeadCodeEliminationPass(), graph);
  EXPECT_EQ(ir::findGraphProblems(graph), std::vector<std::string>{});
}

TEST(SimplifyLayoutTest, RemovesEachKindOfNoOp) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 3, 4}));
  Value* v = graph.apply(OpKind::Reshape, {x}, shape({2, 3, 4}));
  v = graph.apply(OpKind::Permute, {v}, perm({0, 1, 2}));
  v = graph.apply(OpKind::Slice, {v}, slice(1, 0, 3, 1));
  v = graph.apply(OpKind::Affine, {v}, affine(1.0, 0.0));
  Value* out = graph.apply(OpKind::Relu, {v});
  graph.addOutput(out);

  simplify(graph);

  EXPECT_EQ(kindsOf(graph), (std::vector<OpKind>{OpKind::Relu}));
  EXPECT_EQ(out->producer()->input(0), x);
  EXPECT_EQ(x->users().size(), 1u);
}

TEST(SimplifyLayoutTest, KeepsRealLayoutChanges) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 3, 4}));
  Value* v = graph.apply(OpKind::Reshape, {x}, shape({6, 4}));
  v = graph.apply(OpKind::Permute, {v}, perm({1, 0}));
  v = graph.apply(OpKind::Slice, {v}, slice(1, 0, 6, 2));
  v = graph.apply(OpKind::Affine, {v}, affine(1.0, 0.5));
  v = graph.apply(OpKind::Affine, {v}, affine(2.0, 0.0));
  graph.addOutput(v);
  const std::string before = ir::printGraph(graph);

  simplify(graph);

  EXPECT_EQ(ir::printGraph(graph), before);
}

TEST(SimplifyLayoutTest, FullSliceWithAStepOnASizeOneDimensionIsANoOp) {
  Graph graph;
  Value* x = graph.addInput("x", f32({3, 1}));
  Value* s = graph.apply(OpKind::Slice, {x}, slice(1, 0, 1, 2));
  graph.addOutput(graph.apply(OpKind::Exp, {s}));
  simplify(graph);
  EXPECT_EQ(kindsOf(graph), (std::vector<OpKind>{OpKind::Exp}));
}

TEST(SimplifyLayoutTest, NoOpFeedingAGraphOutputIsReplacedInTheOutputs) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 2}));
  Value* r = graph.apply(OpKind::Relu, {x});
  Value* same = graph.apply(OpKind::Permute, {r}, perm({0, 1}));
  graph.addOutput(same);
  graph.addOutput(graph.apply(OpKind::Affine, {x}, affine(1.0, 0.0)));

  simplify(graph);

  EXPECT_EQ(kindsOf(graph), (std::vector<OpKind>{OpKind::Relu}));
  EXPECT_EQ(graph.outputs(), (std::vector<Value*>{r, x}));
}

TEST(SimplifyLayoutTest, FoldsReshapeChains) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 3, 4}));
  Value* a = graph.apply(OpKind::Reshape, {x}, shape({6, 4}));
  Value* b = graph.apply(OpKind::Reshape, {a}, shape({24}));
  Value* c = graph.apply(OpKind::Reshape, {b}, shape({4, 6}));
  Value* out = graph.apply(OpKind::Relu, {c});
  graph.addOutput(out);

  simplify(graph);

  EXPECT_EQ(ir::printGraph(graph), R"(graph(%x: f32[2,3,4]) {
  %0: f32[4,6] = reshape(%x) {shape=[4,6]}
  %1: f32[4,6] = relu(%0)
  return (%1)
}
)");
}

TEST(SimplifyLayoutTest, ReshapeChainBackToTheSourceShapeDisappears) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 3}));
  Value* r = graph.apply(OpKind::Relu, {x});
  Value* flat = graph.apply(OpKind::Reshape, {r}, shape({6}));
  Value* back = graph.apply(OpKind::Reshape, {flat}, shape({2, 3}));
  graph.addOutput(graph.apply(OpKind::Exp, {back}));
  graph.addOutput(back);

  simplify(graph);

  EXPECT_EQ(kindsOf(graph), (std::vector<OpKind>{OpKind::Relu, OpKind::Exp}));
  EXPECT_EQ(graph.outputs()[1], r);
  EXPECT_EQ(graph.nodes()[1]->input(0), r);
}

TEST(SimplifyLayoutTest, InnerReshapeWithOtherUsersIsKept) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 6}));
  Value* a = graph.apply(OpKind::Reshape, {x}, shape({3, 4}));
  Value* b = graph.apply(OpKind::Reshape, {a}, shape({12}));
  graph.addOutput(graph.apply(OpKind::Exp, {a}));
  graph.addOutput(b);

  simplify(graph);

  ASSERT_EQ(kindsOf(graph), (std::vector<OpKind>{OpKind::Reshape, OpKind::Reshape, OpKind::Exp}));
  // The outer reshape now reads x directly.
  EXPECT_EQ(graph.outputs()[1]->producer()->input(0), x);
  EXPECT_EQ(graph.nodes()[2]->input(0), a);
}

TEST(SimplifyLayoutTest, RunsUnderThePassManagerWithVerification) {
  Graph graph;
  Value* x = graph.addInput("x", f32({4, 4}));
  Value* v = graph.apply(OpKind::Affine, {x}, affine(1.0, 0.0));
  v = graph.apply(OpKind::Reshape, {v}, shape({2, 8}));
  v = graph.apply(OpKind::Reshape, {v}, shape({16}));
  v = graph.apply(OpKind::Slice, {v}, slice(0, 0, 16, 1));
  graph.addOutput(graph.apply(OpKind::Sigmoid, {v}));
  std::vector<std::unique_ptr<compiler::Pass>> passes;
  passes.push_back(compiler::createSimplifyLayoutPass());
  passes.push_back(compiler::createDeadCodeEliminationPass());
  testing::runPasses(std::move(passes), graph);
  EXPECT_EQ(kindsOf(graph), (std::vector<OpKind>{OpKind::Reshape, OpKind::Sigmoid}));
  EXPECT_EQ(graph.nodes()[0]->input(0), x);
  EXPECT_EQ(graph.nodes()[0]->output()->type(), f32({16}));
}

} // namespace
} // namespace popsim
