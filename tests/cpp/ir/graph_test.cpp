// Graph building and editing: leaves, nodes, use-def links kept consistent by
// every edit (replaceAllUsesWith, replaceInput, removal) and deep cloning.

#include "common/error.h"
#include "ir/graph.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

namespace popsim {
namespace {

using ir::DType;
using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::Value;
using ir::ValueRole;
using testing::f32;

Value* floatConstant(Graph& graph, ir::Shape shape, const std::vector<float>& values) {
  return graph.addConstant(f32(std::move(shape)), testing::bytesOf(values));
}

size_t countOf(const std::vector<Node*>& users, const Node* node) {
  return static_cast<size_t>(std::count(users.begin(), users.end(), node));
}

TEST(GraphTest, LeavesHaveRolesNamesAndTypes) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 4}));
  Value* w = graph.addWeight("fc.weight", f32({3, 4}), true);
  Value* mean = graph.addWeight("bn.running_mean", f32({3}), false);
  Value* c = floatConstant(graph, {2}, {1.0f, 2.0f});
  Value* s = graph.addScalarConstant(0.5f);

  EXPECT_EQ(x->role(), ValueRole::Input);
  EXPECT_EQ(x->name(), "x");
  EXPECT_EQ(x->type(), f32({2, 4}));
  EXPECT_EQ(w->role(), ValueRole::Weight);
  EXPECT_TRUE(w->trainable());
  EXPECT_FALSE(mean->trainable());
  EXPECT_EQ(c->role(), ValueRole::Constant);
  EXPECT_EQ(c->constantData(), testing::bytesOf({1.0f, 2.0f}));
  EXPECT_EQ(s->type(), f32({}));
  float scalar = 0;
  std::memcpy(&scalar, s->constantData().data(), sizeof(float));
  EXPECT_EQ(scalar, 0.5f);

  EXPECT_EQ(graph.inputs(), (std::vector<Value*>{x}));
  EXPECT_EQ(graph.weights(), (std::vector<Value*>{w, mean}));
  EXPECT_EQ(graph.constants(), (std::vector<Value*>{c, s}));
  EXPECT_EQ(graph.findWeight("fc.weight"), w);
  EXPECT_EQ(graph.findWeight("fc.bias"), nullptr);
  EXPECT_EQ(graph.numValues(), 5u);
  for (const Value* leaf : {x, w, mean, c, s}) {
    EXPECT_EQ(leaf->producer(), nullptr);
    EXPECT_TRUE(leaf->users().empty());
    EXPECT_TRUE(graph.owns(leaf));
  }
}

TEST(GraphTest, DuplicateWeightNameIsAnInternalError) {
  Graph graph;
  graph.addWeight("fc.weight", f32({3, 4}), true);
  const CoreError error =
      testing::captureError([&] { graph.addWeight("fc.weight", f32({3}), true); });
  EXPECT_EQ(error.kind(), ErrorKind::Internal);
  EXPECT_TRUE(testing::contains(error.what(), "weight 'fc.weight' added twice."));
  EXPECT_EQ(graph.weights().size(), 1u);
}

TEST(GraphTest, ConstantWithWrongByteCountIsAnInternalError) {
  Graph graph;
  const CoreError error =
      testing::captureError([&] { graph.addConstant(f32({3}), std::vector<uint8_t>(8)); });
  EXPECT_EQ(error.kind(), ErrorKind::Internal);
  EXPECT_TRUE(testing::contains(error.what(), "constant f32[3] given 8 bytes."));
  EXPECT_TRUE(graph.constants().empty());
}

TEST(GraphTest, NodesLinkProducersAndUsers) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 4}));
  Value* w = graph.addWeight("fc.weight", f32({3, 4}), true);
  Node* linear = graph.addNode(OpKind::Linear, {x, w});
  Value* h = linear->output();
  Value* r = graph.apply(OpKind::Relu, {h});
  Value* sum = graph.apply(OpKind::Add, {r, r});
  graph.addOutput(sum);

  ASSERT_EQ(graph.nodes().size(), 3u);
  EXPECT_EQ(graph.nodes()[0].get(), linear);
  EXPECT_EQ(linear->kind(), OpKind::Linear);
  EXPECT_EQ(linear->name(), "linear");
  EXPECT_EQ(linear->inputs(), (std::vector<Value*>{x, w}));
  EXPECT_EQ(h->type(), f32({2, 3}));
  EXPECT_EQ(h->role(), ValueRole::Computed);
  EXPECT_EQ(h->producer(), linear);
  EXPECT_EQ(x->users(), (std::vector<Node*>{linear}));
  EXPECT_EQ(w->users(), (std::vector<Node*>{linear}));

  Node* relu = graph.nodes()[1].get();
  Node* add = graph.nodes()[2].get();
  EXPECT_EQ(r->producer(), relu);
  EXPECT_EQ(h->users(), (std::vector<Node*>{relu}));
  // One entry per operand position.
  EXPECT_EQ(r->users(), (std::vector<Node*>{add, add}));
  EXPECT_TRUE(sum->users().empty());
  EXPECT_EQ(graph.outputs(), (std::vector<Value*>{sum}));
  EXPECT_EQ(linear->id(), 0);
  EXPECT_EQ(relu->id(), 1);
  EXPECT_EQ(add->id(), 2);
  EXPECT_TRUE(ir::findGraphProblems(graph).empty());
}

TEST(GraphTest, AddNodeRejectsValuesOfAnotherGraph) {
  Graph graph;
  Graph other;
  Value* foreign = other.addInput("x", f32({2}));
  const CoreError error = testing::captureError([&] { graph.apply(OpKind::Relu, {foreign}); });
  EXPECT_EQ(error.kind(), ErrorKind::Internal);
  EXPECT_TRUE(testing::contains(error.what(), "node relu given a value from another graph."));
  EXPECT_TRUE(graph.nodes().empty());
  EXPECT_FALSE(graph.owns(foreign));
  EXPECT_FALSE(graph.owns(nullptr));
}

TEST(GraphTest, FailedAddNodeLeavesTheGraphUnchanged) {
  Graph graph;
  Value* a = graph.addInput("a", f32({3}));
  Value* b = graph.addInput("b", f32({4}));
  const CoreError error = testing::captureError([&] { graph.apply(OpKind::Add, {a, b}); });
  EXPECT_EQ(error.kind(), ErrorKind::Compilation);
  EXPECT_TRUE(graph.nodes().empty());
  EXPECT_TRUE(a->users().empty());
  EXPECT_TRUE(b->users().empty());
  EXPECT_EQ(graph.numValues(), 2u);
}

TEST(GraphTest, ReplaceAllUsesWithRedirectsUsersAndGraphOutputs) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 3}));
  Value* y = graph.addInput("y", f32({2, 3}));
  Value* e = graph.apply(OpKind::Exp, {x});
  Value* sum = graph.apply(OpKind::Add, {e, e});
  Value* t = graph.apply(OpKind::Tanh, {e});
  graph.addOutput(e);
  graph.addOutput(sum);
  graph.addOutput(e);
  Node* add = sum->producer();
  Node* tanh = t->producer();

  graph.replaceAllUsesWith(e, y);

  EXPECT_TRUE(e->users().empty());
  EXPECT_EQ(add->inputs(), (std::vector<Value*>{y, y}));
  EXPECT_EQ(tanh->inputs(), (std::vector<Value*>{y}));
  EXPECT_EQ(countOf(y->users(), add), 2u);
  EXPECT_EQ(countOf(y->users(), tanh), 1u);
  EXPECT_EQ(y->users().size(), 3u);
  EXPECT_EQ(graph.outputs(), (std::vector<Value*>{y, sum, y}));
  // The exp node still exists (now dead) and the graph is consistent.
  EXPECT_EQ(graph.nodes().size(), 3u);
  EXPECT_EQ(x->users().size(), 1u);
  EXPECT_TRUE(ir::findGraphProblems(graph).empty());
}

TEST(GraphTest, ReplaceAllUsesWithRequiresTheSameType) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 3}));
  Value* y = graph.addInput("y", f32({3, 2}));
  Value* r = graph.apply(OpKind::Relu, {x});
  const CoreError error = testing::captureError([&] { graph.replaceAllUsesWith(x, y); });
  EXPECT_EQ(error.kind(), ErrorKind::Internal);
  EXPECT_TRUE(testing::contains(error.what(), "replacing f32[2,3] with f32[3,2]."));
  EXPECT_EQ(r->producer()->input(0), x);
  EXPECT_EQ(x->users().size(), 1u);
}

TEST(GraphTest, ReplaceInputMovesOneUse) {
  Graph graph;
  Value* x = graph.addInput("x", f32({4}));
  Value* y = graph.addInput("y", f32({4}));
  Value* sum = graph.apply(OpKind::Add, {x, x});
  Node* add = sum->producer();
  graph.addOutput(sum);

  graph.replaceInput(add, 1, y);

  EXPECT_EQ(add->inputs(), (std::vector<Value*>{x, y}));
  EXPECT_EQ(x->users(), (std::vector<Node*>{add}));
  EXPECT_EQ(y->users(), (std::vector<Node*>{add}));
  EXPECT_TRUE(ir::findGraphProblems(graph).empty());

  graph.replaceInput(add, 0, y);
  EXPECT_TRUE(x->users().empty());
  EXPECT_EQ(y->users(), (std::vector<Node*>{add, add}));
  EXPECT_TRUE(ir::findGraphProblems(graph).empty());
}

TEST(GraphTest, RemoveNodesIfRemovesWholeDeadChainsOnly) {
  Graph graph;
  Value* x = graph.addInput("x", f32({4}));
  Value* kept = graph.apply(OpKind::Relu, {x});
  Value* a = graph.apply(OpKind::Exp, {x});
  Value* b = graph.apply(OpKind::Tanh, {a});
  graph.apply(OpKind::Sigmoid, {b}); // dead chain exp -> tanh -> sigmoid
  Value* lastButOutput = graph.apply(OpKind::Sqrt, {kept});
  graph.addOutput(lastButOutput);
  graph.addOutput(kept);

  std::vector<OpKind> asked;
  const size_t removed = graph.removeNodesIf([&](const Node& node) {
    asked.push_back(node.kind());
    return true;
  });

  EXPECT_EQ(removed, 3u);
  // Walked backwards; a node whose outputs are used is never offered.
  EXPECT_EQ(asked, (std::vector<OpKind>{OpKind::Sigmoid, OpKind::Tanh, OpKind::Exp}));
  ASSERT_EQ(graph.nodes().size(), 2u);
  EXPECT_EQ(graph.nodes()[0]->kind(), OpKind::Relu);
  EXPECT_EQ(graph.nodes()[1]->kind(), OpKind::Sqrt);
  EXPECT_EQ(x->users(), (std::vector<Node*>{kept->producer()}));
  EXPECT_TRUE(ir::findGraphProblems(graph).empty());
}

TEST(GraphTest, RemoveNodesIfHonoursThePredicate) {
  Graph graph;
  Value* x = graph.addInput("x", f32({4}));
  graph.apply(OpKind::Exp, {x});
  graph.apply(OpKind::Tanh, {x});
  Value* out = graph.apply(OpKind::Relu, {x});
  graph.addOutput(out);

  const size_t removed =
      graph.removeNodesIf([](const Node& node) { return node.kind() == OpKind::Tanh; });
  EXPECT_EQ(removed, 1u);
  ASSERT_EQ(graph.nodes().size(), 2u);
  EXPECT_EQ(graph.nodes()[0]->kind(), OpKind::Exp);
  EXPECT_EQ(graph.nodes()[1]->kind(), OpKind::Relu);
  EXPECT_EQ(x->users().size(), 2u);
  EXPECT_TRUE(ir::findGraphProblems(graph).empty());
}

TEST(GraphTest, RemoveUnusedLeavesKeepsUsedWeightsConstantsAndAllInputs) {
  Graph graph;
  Value* x = graph.addInput("x", f32({3}));
  Value* unusedInput = graph.addInput("unused", f32({3}));
  Value* usedWeight = graph.addWeight("used", f32({3}), true);
  graph.addWeight("unused.weight", f32({3}), true);
  Value* outputWeight = graph.addWeight("returned", f32({2}), false);
  Value* usedConstant = floatConstant(graph, {3}, {1, 2, 3});
  floatConstant(graph, {1}, {4});
  Value* sum = graph.apply(OpKind::Add, {x, usedWeight});
  graph.addOutput(graph.apply(OpKind::Mul, {sum, usedConstant}));
  graph.addOutput(outputWeight);

  EXPECT_EQ(graph.removeUnusedLeaves(), 2u);
  EXPECT_EQ(graph.weights(), (std::vector<Value*>{usedWeight, outputWeight}));
  EXPECT_EQ(graph.constants(), (std::vector<Value*>{usedConstant}));
  EXPECT_EQ(graph.inputs(), (std::vector<Value*>{x, unusedInput}));
  EXPECT_EQ(graph.findWeight("unused.weight"), nullptr);
  EXPECT_EQ(graph.removeUnusedLeaves(), 0u);
  EXPECT_TRUE(ir::findGraphProblems(graph).empty());
}

TEST(GraphTest, SetOutputReplacesOneOutput) {
  Graph graph;
  Value* x = graph.addInput("x", f32({3}));
  Value* r = graph.apply(OpKind::Relu, {x});
  graph.addOutput(x);
  graph.addOutput(x);
  graph.setOutput(1, r);
  EXPECT_EQ(graph.outputs(), (std::vector<Value*>{x, r}));
  const CoreError error = testing::captureError([&] { graph.setOutput(2, r); });
  EXPECT_EQ(error.kind(), ErrorKind::Internal);
  EXPECT_TRUE(testing::contains(error.what(), "bad graph output 2."));
}

// A graph using every kind of leaf, placement, locations and attributes.
std::unique_ptr<Graph> buildRichGraph() {
  auto graph = std::make_unique<Graph>();
  Value* x = graph->addInput("x", f32({2, 4}));
  Value* ids = graph->addInput("ids", {DType::Int64, {2}});
  Value* w = graph->addWeight("fc.weight", f32({3, 4}), true);
  Value* table = graph->addWeight("emb.weight", f32({5, 3}), false);
  Value* c = floatConstant(*graph, {3}, {0.5f, -1.0f, 2.0f});
  Node* linear =
      graph->addNode(OpKind::Linear, {x, w}, {}, {"/src/model.py", 7, "forward", "", ""});
  linear->setPlacement({"stage1", 1, 1});
  Value* shifted = graph->apply(OpKind::Add, {linear->output(), c});
  Value* emb = graph->apply(OpKind::Embedding, {table, ids}, {{"padding_idx", int64_t{-1}}});
  Value* sum = graph->apply(OpKind::Add, {shifted, emb});
  Value* soft = graph->apply(OpKind::Softmax, {sum}, {{"dim", int64_t{1}}});
  graph->addOutput(soft);
  graph->addOutput(shifted);
  return graph;
}

TEST(GraphTest, ClonePrintsIdenticallyAndIsIndependent) {
  std::unique_ptr<Graph> original = buildRichGraph();
  std::unique_ptr<Graph> copy = original->clone();
  const ir::PrintOptions fullPaths{true, true};
  EXPECT_EQ(ir::printGraph(*copy, fullPaths), ir::printGraph(*original, fullPaths));
  EXPECT_TRUE(ir::findGraphProblems(*copy).empty());

  ASSERT_EQ(copy->nodes().size(), original->nodes().size());
  ASSERT_EQ(copy->weights().size(), original->weights().size());
  for (size_t i = 0; i < copy->nodes().size(); ++i) {
    const Node& a = *original->nodes()[i];
    const Node& b = *copy->nodes()[i];
    EXPECT_NE(&a, &b);
    EXPECT_EQ(a.kind(), b.kind());
    EXPECT_TRUE(a.attrs() == b.attrs());
    EXPECT_EQ(a.placement(), b.placement());
    EXPECT_EQ(a.location().str(), b.location().str());
    for (size_t k = 0; k < b.inputs().size(); ++k) {
      EXPECT_TRUE(copy->owns(b.input(k)));
      EXPECT_FALSE(original->owns(b.input(k)));
    }
  }
  for (size_t i = 0; i < copy->weights().size(); ++i) {
    EXPECT_NE(copy->weights()[i], original->weights()[i]);
    EXPECT_EQ(copy->weights()[i]->name(), original->weights()[i]->name());
    EXPECT_EQ(copy->weights()[i]->trainable(), original->weights()[i]->trainable());
  }
  EXPECT_EQ(copy->constants()[0]->constantData(), original->constants()[0]->constantData());
  for (const Value* output : copy->outputs()) {
    EXPECT_TRUE(copy->owns(output));
  }

  // Editing the copy leaves the original alone, and the other way round.
  const std::string before = ir::printGraph(*original);
  copy->nodes()[0]->setPlacement({});
  copy->setOutput(0, copy->outputs()[1]);
  copy->removeNodesIf([](const Node&) { return true; });
  copy->removeUnusedLeaves();
  EXPECT_EQ(ir::printGraph(*original), before);
  EXPECT_NE(ir::printGraph(*copy), before);
  EXPECT_EQ(copy->nodes().size(), 2u);
  EXPECT_EQ(copy->weights().size(), 1u);
  EXPECT_TRUE(ir::findGraphProblems(*copy).empty());
  EXPECT_TRUE(ir::findGraphProblems(*original).empty());

  original.reset();
  EXPECT_EQ(copy->findWeight("fc.weight")->users().size(), 1u);
  EXPECT_EQ(copy->constants()[0]->constantData(), testing::bytesOf({0.5f, -1.0f, 2.0f}));
}

TEST(GraphTest, CloneOfAnEditedGraphKeepsTheEdits) {
  Graph graph;
  Value* x = graph.addInput("x", f32({4}));
  Value* y = graph.addInput("y", f32({4}));
  Value* e = graph.apply(OpKind::Exp, {x});
  graph.apply(OpKind::Relu, {y}); // removed below
  Value* out = graph.apply(OpKind::Add, {e, x});
  graph.addOutput(out);
  graph.replaceInput(out->producer(), 1, y);
  graph.removeNodesIf([](const Node&) { return true; });

  std::unique_ptr<Graph> copy = graph.clone();
  EXPECT_EQ(ir::printGraph(*copy), ir::printGraph(graph));
  ASSERT_EQ(copy->nodes().size(), 2u);
  EXPECT_EQ(copy->nodes()[1]->input(1), copy->inputs()[1]);
  EXPECT_EQ(copy->inputs()[1]->users().size(), 1u);
  EXPECT_TRUE(ir::findGraphProblems(*copy).empty());
}

// Input updates stay the last outputs, whatever is added after them (the
// training program adds anchored gradients after the importer's updates).
TEST(GraphTest, OutputsAddedLaterGoBeforeTheInputUpdates) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2}));
  Value* doubled = graph.apply(OpKind::Add, {x, x});
  graph.addOutput(doubled);
  graph.addInputUpdate(0, doubled);
  Value* squared = graph.apply(OpKind::Mul, {x, x});
  graph.addOutput(squared);
  ASSERT_EQ(graph.outputs().size(), 3u);
  EXPECT_EQ(graph.outputs()[1], squared);
  EXPECT_TRUE(graph.isInputUpdate(2));
  EXPECT_FALSE(graph.isInputUpdate(1));
  EXPECT_EQ(graph.outputs()[2], doubled);
}

} // namespace
} // namespace popsim
