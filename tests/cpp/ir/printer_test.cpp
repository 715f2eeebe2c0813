// Golden tests of the IR printer: the exact text of small graphs, which other
// golden tests (passes, frontend) and users' bug reports rely on.

#include "ir/graph.h"
#include "ir/printer.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <cstring>

namespace popsim {
namespace {

using ir::DType;
using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::Value;
using testing::f32;

// input, two weights, a constant, linear + relu + add + reshape; two ops
// carry source locations.
std::unique_ptr<Graph> buildLinearGraph() {
  auto graph = std::make_unique<Graph>();
  Value* x = graph->addInput("x", f32({2, 4}));
  Value* w = graph->addWeight("fc.weight", f32({3, 4}), true);
  Value* b = graph->addWeight("fc.bias", f32({3}), true);
  Value* c = graph->addConstant(f32({3}), testing::bytesOf({0.5f, -1.0f, 2.0f}));
  Value* h = graph->apply(OpKind::Linear, {x, w, b}, {},
                          {"/home/user/project/model.py", 7, "forward", "", ""});
  Value* r = graph->apply(OpKind::Relu, {h});
  Value* a = graph->apply(OpKind::Add, {r, c}, {}, {"/home/user/project/model.py", 9, "", "", ""});
  Value* s = graph->apply(OpKind::Reshape, {a}, {{"shape", std::vector<int64_t>{3, 2}}});
  graph->addOutput(s);
  return graph;
}

TEST(PrinterTest, GoldenLinearReluReshape) {
  const std::unique_ptr<Graph> graph = buildLinearGraph();
  EXPECT_EQ(ir::printGraph(*graph), R"(graph(%x: f32[2,4]) {
  weights:
    @fc.weight: f32[3,4]
    @fc.bias: f32[3]
  constants:
    $c0: f32[3] = [0.5, -1, 2]
  %0: f32[2,3] = linear(%x, @fc.weight, @fc.bias)  # model.py:7
  %1: f32[2,3] = relu(%0)
  %2: f32[2,3] = add(%1, $c0)  # model.py:9
  %3: f32[3,2] = reshape(%2) {shape=[3,2]}
  return (%3)
}
)");
}

TEST(PrinterTest, GoldenWithoutLocations) {
  const std::unique_ptr<Graph> graph = buildLinearGraph();
  ir::PrintOptions options;
  options.locations = false;
  EXPECT_EQ(ir::printGraph(*graph, options), R"(graph(%x: f32[2,4]) {
  weights:
    @fc.weight: f32[3,4]
    @fc.bias: f32[3]
  constants:
    $c0: f32[3] = [0.5, -1, 2]
  %0: f32[2,3] = linear(%x, @fc.weight, @fc.bias)
  %1: f32[2,3] = relu(%0)
  %2: f32[2,3] = add(%1, $c0)
  %3: f32[3,2] = reshape(%2) {shape=[3,2]}
  return (%3)
}
)");
}

TEST(PrinterTest, FullPathsKeepTheDirectory) {
  const std::unique_ptr<Graph> graph = buildLinearGraph();
  ir::PrintOptions options;
  options.fullPaths = true;
  const std::string text = ir::printGraph(*graph, options);
  EXPECT_TRUE(testing::contains(text, "  %0: f32[2,3] = linear(%x, @fc.weight, @fc.bias)  "
                                      "# /home/user/project/model.py:7\n"));
  EXPECT_TRUE(testing::contains(text, "  %2: f32[2,3] = add(%1, $c0)  "
                                      "# /home/user/project/model.py:9\n"));
}

std::vector<uint8_t> rawBytes(const void* data, size_t size) {
  std::vector<uint8_t> bytes(size);
  std::memcpy(bytes.data(), data, size);
  return bytes;
}

TEST(PrinterTest, GoldenLeavesPlacementsAndAttributes) {
  Graph graph;
  Value* a = graph.addInput("my-input", f32({2, 3})); // not an identifier: numbered
  Value* tokens = graph.addInput("tokens", {DType::Int64, {2}});
  Value* mean = graph.addWeight("bn.running_mean", f32({3}), false);
  Value* quarter = graph.addScalarConstant(0.25f);
  Value* table = graph.addConstant(f32({3, 4}), testing::bytesOf(testing::randomFloats(12, 3)));
  const int64_t ints[] = {3, -7};
  graph.addConstant({DType::Int64, {2}}, rawBytes(ints, sizeof(ints)));
  graph.addConstant({DType::Bool, {3}}, {1, 0, 1});

  Node* sub = graph.addNode(OpKind::Sub, {a, mean}, {}, {"/abs/path/net.py", 12, "f", "", ""});
  sub->setPlacement({"stage1", 1, 1});
  Value* scaled = graph.apply(OpKind::Affine, {sub->output()}, {{"shift", -1.25}, {"scale", 0.5}});
  Node* slice = graph.addNode(
      OpKind::Slice, {scaled},
      {{"step", int64_t{2}}, {"start", int64_t{0}}, {"end", int64_t{3}}, {"dim", int64_t{1}}});
  slice->setPlacement({"", 2, 2});
  Value* product = graph.apply(OpKind::Mul, {slice->output(), quarter});
  Value* embedded = graph.apply(OpKind::Embedding, {table, tokens}, {{"padding_idx", int64_t{-1}}});
  graph.addOutput(product);
  graph.addOutput(embedded);
  graph.addOutput(tokens);

  EXPECT_EQ(ir::printGraph(graph), R"(graph(%input0: f32[2,3], %tokens: i64[2]) {
  weights:
    @bn.running_mean: f32[3] (buffer)
  constants:
    $c0: f32[] = 0.25
    $c1: f32[3,4] = <12 values>
    $c2: i64[2] = [3, -7]
    $c3: bool[3] = [true, false, true]
  %0: f32[2,3] = sub(%input0, @bn.running_mean) [stage 1, ipu 1, block "stage1"]  # net.py:12
  %1: f32[2,3] = affine(%0) {scale=0.5, shift=-1.25}
  %2: f32[2,2] = slice(%1) {dim=1, end=3, start=0, step=2} [stage 2, ipu 2]
  %3: f32[2,2] = mul(%2, $c0)
  %4: f32[2,4] = embedding($c1, %tokens) {padding_idx=-1}
  return (%3, %4, %tokens)
}
)");
}

TEST(PrinterTest, GoldenEmptyGraph) {
  Graph graph;
  EXPECT_EQ(ir::printGraph(graph), "graph() {\n  return ()\n}\n");
}

TEST(PrinterTest, NumberingFollowsTheScheduleNotNodeIds) {
  Graph graph;
  Value* x = graph.addInput("x", f32({4}));
  graph.apply(OpKind::Exp, {x}); // dead, removed below
  Value* r = graph.apply(OpKind::Relu, {x});
  graph.addOutput(graph.apply(OpKind::Sqrt, {r}));
  graph.removeNodesIf([](const Node&) { return true; });
  EXPECT_EQ(ir::printGraph(graph), R"(graph(%x: f32[4]) {
  %0: f32[4] = relu(%x)
  %1: f32[4] = sqrt(%0)
  return (%1)
}
)");
}

TEST(PrinterTest, ConstantsPrintNineSignificantDigits) {
  Graph graph;
  graph.addConstant(f32({2}), testing::bytesOf({1.0f / 3.0f, 1e-6f}));
  graph.addConstant({DType::Int32, {}}, rawBytes("\x05\x00\x00\x00", 4));
  EXPECT_EQ(ir::printGraph(graph), R"(graph() {
  constants:
    $c0: f32[2] = [0.333333343, 9.99999997e-07]
    $c1: i32[] = 5
  return ()
}
)");
}

} // namespace
} // namespace popsim
