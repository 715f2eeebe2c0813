// The IR parser is the printer's inverse: every graph printed in the full
// form reads back as a graph that prints the same, with the same values
// (constants, attributes, placements); bad text is refused naming its line.

#include "common/float16.h"
#include "ir/graph.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace popsim {
namespace {

using ir::DType;
using ir::Graph;
using ir::OpKind;
using ir::Value;
using testing::f32;

ir::PrintOptions fullForm() {
  ir::PrintOptions options;
  options.fullPaths = true;
  options.full = true;
  return options;
}

// print -> parse -> print gives the same text; returns the parsed graph.
std::unique_ptr<Graph> roundTrip(const Graph& graph) {
  const std::string text = ir::printGraph(graph, fullForm());
  std::unique_ptr<Graph> read = ir::parseGraph(text);
  EXPECT_EQ(ir::findGraphProblems(*read), std::vector<std::string>{});
  EXPECT_EQ(ir::printGraph(*read, fullForm()), text);
  return read;
}

// Everything the full form carries: blocks, a quoted input name, overlaps,
// buffers and state of each kind, constants of every dtype (one of more than
// eight values, float16 and non-finite values), multi-output and no-output
// ops, attributes of every type, placements with a per-op
// availableMemoryProportion, name scopes, the loss, a gradient map with its
// seed, and an input update.
std::unique_ptr<Graph> buildEverything() {
  auto graph = std::make_unique<Graph>();
  graph->addBlock({"A", 0, {"/src/model.py", 4, "forward", "", ""}});
  graph->addBlock({"B", -1, {"/src/model.py", 9, "forward", "", ""}});
  Value* x = graph->addInput("images batch", f32({2, 1, 4, 4}));
  Value* labels = graph->addInput("labels", {DType::Int64, {2}});
  graph->setInputOverlap(0, ir::HostOverlap::AccumulationLoop);
  Value* w = graph->addWeight("conv.weight", f32({3, 1, 3, 3}), true);
  Value* mean = graph->addWeight("bn.running_mean", f32({3}), false);
  Value* hyper = graph->addState("optimizer/group0/hyper@ipu1", {DType::Float64, {5}},
                                 ir::StateKind::Optimizer);
  graph->addState("random/counter", {DType::Int64, {}}, ir::StateKind::Random);
  std::vector<float> ramp(12);
  for (size_t i = 0; i < ramp.size(); ++i)
    ramp[i] = 0.1f * static_cast<float>(i) - 1.0f / 3.0f;
  Value* many = graph->addConstant(f32({12}), testing::bytesOf(ramp));
  Value* special = graph->addConstant(
      f32({3}), testing::bytesOf({std::numeric_limits<float>::infinity(),
                                  -std::numeric_limits<float>::infinity(), 1e-30f}));
  Value* half = graph->addScalarConstant(0.1f, DType::Float16);
  std::vector<uint8_t> flags = {1, 0};
  Value* mask = graph->addConstant({DType::Bool, {2}}, flags);
  const double third = 1.0 / 3.0;
  std::vector<uint8_t> doubles(sizeof(double));
  std::memcpy(doubles.data(), &third, sizeof(third));
  graph->addConstant({DType::Float64, {}}, doubles);
  std::vector<uint8_t> ints(8);
  const int32_t seven[2] = {7, -7};
  std::memcpy(ints.data(), seven, sizeof(seven));
  graph->addConstant({DType::Int32, {2}}, ints);

  const ir::SourceLocation here{"/src/model.py", 5, "forward", "", "encoder/block"};
  ir::Node* conv = graph->addNode(OpKind::Convolution, {x, w},
                                  {{"stride", std::vector<int64_t>{1, 1}},
                                   {"padding", std::vector<int64_t>{1, 1}},
                                   {"dilation", std::vector<int64_t>{1, 1}},
                                   {"groups", int64_t{1}}},
                                  here);
  ir::Placement inA;
  inA.block = "A";
  inA.ipu = 1;
  inA.stage = 0;
  conv->setPlacement(inA);
  conv->setAvailableMemoryProportion(0.25);
  Value* scaled =
      graph->apply(OpKind::Affine, {conv->output()}, {{"scale", third}, {"shift", 0.1}}, here);
  Value* flat = graph->apply(OpKind::Reshape, {scaled}, {{"shape", std::vector<int64_t>{2, 48}}});
  Value* pooled = graph->apply(OpKind::ReduceMean, {flat},
                               {{"dims", std::vector<int64_t>{1}}, {"keepdim", false}});
  Value* loss = graph->apply(OpKind::ReduceSum, {pooled},
                             {{"dims", std::vector<int64_t>{0}}, {"keepdim", false}});
  ir::Node* fill = graph->addNode(OpKind::Fill, {mean}, {{"value", 0.5}});
  ir::Placement update;
  update.phase = ir::Phase::Update;
  update.ipu = 1;
  fill->setPlacement(update);
  graph->addNode(OpKind::Assign, {hyper, hyper});
  (void)labels;
  (void)many;
  (void)special;
  (void)half;
  (void)mask;
  graph->setLoss(loss);
  graph->addOutput(pooled);
  graph->setOutputOverlap(0, ir::HostOverlap::DeviceIterationLoop);
  graph->addOutput(loss);
  graph->addInputUpdate(0, graph->apply(OpKind::Relu, {x}));
  graph->setGradient(w, graph->apply(OpKind::Abs, {w}));
  graph->setGradientSeed(graph->addScalarConstant(1.0f));
  return graph;
}

TEST(ParserTest, TheFullFormReadsBackAsTheSameGraph) {
  const std::unique_ptr<Graph> graph = buildEverything();
  const std::unique_ptr<Graph> read = roundTrip(*graph);
  // The values behind the text, not only the text.
  ASSERT_EQ(read->constants().size(), graph->constants().size());
  for (size_t i = 0; i < graph->constants().size(); ++i) {
    EXPECT_EQ(read->constants()[i]->type(), graph->constants()[i]->type());
    EXPECT_EQ(read->constants()[i]->constantData(), graph->constants()[i]->constantData()) << i;
  }
  ASSERT_EQ(read->nodes().size(), graph->nodes().size());
  for (size_t i = 0; i < graph->nodes().size(); ++i) {
    const ir::Node& a = *graph->nodes()[i];
    const ir::Node& b = *read->nodes()[i];
    EXPECT_EQ(a.attrs().entries(), b.attrs().entries()) << a.describe();
    EXPECT_TRUE(a.placement() == b.placement()) << a.describe();
    EXPECT_EQ(a.availableMemoryProportion(), b.availableMemoryProportion());
    EXPECT_EQ(a.location().nameScope, b.location().nameScope);
    EXPECT_EQ(a.location().function, b.location().function);
  }
  EXPECT_EQ(read->inputs()[0]->name(), "images batch");
  EXPECT_EQ(read->inputOverlap(0), ir::HostOverlap::AccumulationLoop);
  EXPECT_EQ(read->outputOverlap(0), ir::HostOverlap::DeviceIterationLoop);
  EXPECT_EQ(read->inputUpdates(), std::vector<size_t>{0});
  EXPECT_FALSE(read->findWeight("bn.running_mean")->trainable());
  EXPECT_EQ(read->findState("random/counter")->stateKind(), ir::StateKind::Random);
  EXPECT_EQ(read->blocks().size(), 2u);
  EXPECT_EQ(read->blocks()[1].ipu, -1);
  EXPECT_EQ(read->blocks()[0].location.line, 4);
  ASSERT_EQ(read->gradients().size(), 1u);
  EXPECT_EQ(read->gradients()[0].parameter, read->findWeight("conv.weight"));
  EXPECT_NE(read->gradientSeed(), nullptr);
  EXPECT_EQ(read->loss()->producer()->kind(), OpKind::ReduceSum);
}

TEST(ParserTest, TheDefaultFormParsesWhenNoConstantIsAbbreviated) {
  auto graph = std::make_unique<Graph>();
  Value* x = graph->addInput("x", f32({2, 4}));
  Value* w = graph->addWeight("fc.weight", f32({3, 4}), true);
  Value* c = graph->addConstant(f32({3}), testing::bytesOf({0.5f, -1.0f, 2.0f}));
  Value* h = graph->apply(OpKind::Linear, {x, w}, {}, {"model.py", 7, "forward", "", ""});
  graph->addOutput(graph->apply(OpKind::Add, {h, c}));
  const std::string text = ir::printGraph(*graph);
  EXPECT_EQ(ir::printGraph(*ir::parseGraph(text)), text);
}

// TorchScript names a traced input "1": quoted (%"1"), it is not the
// printer's own %1, the second node's output.
TEST(ParserTest, QuotedNamesDoNotMeetNumberedOnes) {
  auto graph = std::make_unique<Graph>();
  Value* x = graph->addInput("1", f32({2}));
  Value* w = graph->addWeight("0", f32({2}), true); // @0: weights have their own sigil
  Value* h = graph->apply(OpKind::Relu, {x});
  graph->addOutput(graph->apply(OpKind::Add, {h, w}));
  const std::string text = ir::printGraph(*graph, fullForm());
  EXPECT_TRUE(testing::contains(text, "%0: f32[2] = relu(%\"1\")")) << text;
  const std::unique_ptr<Graph> read = roundTrip(*graph);
  EXPECT_EQ(read->inputs()[0]->name(), "1");
  EXPECT_EQ(read->weights()[0]->name(), "0");
}

// What a hand-written file gets wrong is named with its line and column.
TEST(ParserTest, MistakesAreNamedWithTheirLine) {
  const auto problem = [](const std::string& text) {
    return std::string(testing::captureError([&] { ir::parseGraph(text); }).what());
  };
  EXPECT_EQ(problem("graph(%x: f32[2]) {\n  %0: f32[2] = frobnicate(%x)\n  return (%0)\n}\n"),
            "IR text, line 2, column 16: 'frobnicate' is not an op (the line reads '  %0: f32[2] "
            "= frobnicate(%x)').");
  EXPECT_TRUE(testing::contains(
      problem("graph(%x: f32[2]) {\n  %0: f32[3] = relu(%x)\n  return (%0)\n}\n"),
      "line 2, column 3: relu gives output 0 the type f32[2], the text says f32[3]"));
  EXPECT_TRUE(testing::contains(problem("graph(%x: f32[2]) {\n  %0: f32[2] = relu(%y)\n}\n"),
                                "line 2, column 21: '%y' is not defined above"));
  EXPECT_TRUE(testing::contains(
      problem("graph() {\n  constants:\n    $c0: f32[9] = <9 values>\n}\n"),
      "the constant's values are abbreviated; print the graph with PrintOptions::full"));
  EXPECT_TRUE(testing::contains(problem("graph(%x: f32[2]) {\n  return (%x)\n"),
                                "the graph is not closed: expected a line '}'"));
  EXPECT_TRUE(
      testing::contains(problem("graph(%x: f32[2]) {\n  %0: f32[2] = relu(%x) {scale=2}\n}\n"),
                        "relu has no attribute 'scale'"));
  const CoreError error =
      testing::captureError([] { ir::parseGraph("graph(%x: f64x[2]) {\n}\n"); });
  EXPECT_EQ(error.kind(), ErrorKind::InvalidInput);
  EXPECT_TRUE(testing::contains(error.what(), "'f64x' is not a dtype"));
}

} // namespace
} // namespace popsim
