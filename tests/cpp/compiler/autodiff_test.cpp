// The autodiff pass builds backward ops with the right structure: in the
// Backward phase after the forward ops, at their forward op's IPU and source
// line, summing gradients of values used twice, skipping what the loss does
// not depend on, and refusing ops without a gradient rule. (Gradient values
// are checked against torch.autograd by tests/python/test_gradients.py.)

#include "common/error.h"
#include "compiler/training/autodiff.h"
#include "ir/graph.h"
#include "ir/op_schema.h"
#include "ir/verifier.h"
#include "test_utils.h"

#include <gtest/gtest.h>

namespace popsim {
namespace {

using ir::Graph;
using ir::OpKind;
using ir::Phase;
using ir::Value;
using testing::f32;

const ir::SourceLocation kModelLine{"model.py", 7, "forward", "", ""};

ir::Attributes meanOfAll(int64_t rank) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d)
    dims.push_back(d);
  return {{"dims", dims}, {"keepdim", false}};
}

TEST(AutodiffTest, BackwardOpsFollowTheForwardOpsAtTheirIpuAndLine) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 4}));
  Value* w = graph.addWeight("fc.weight", f32({3, 4}), true);
  Value* b = graph.addWeight("fc.bias", f32({3}), true);
  ir::Node* linear = graph.addNode(OpKind::Linear, {x, w, b}, {}, kModelLine);
  ir::Placement onIpu1;
  onIpu1.ipu = 1;
  linear->setPlacement(onIpu1);
  Value* r = graph.apply(OpKind::Relu, {linear->output()});
  Value* loss = graph.apply(OpKind::ReduceMean, {r}, meanOfAll(2));
  const size_t forwardCount = graph.nodes().size();

  const auto grads = compiler::buildGradients(graph, loss, {w, b});

  ASSERT_EQ(grads.size(), 2u);
  EXPECT_EQ(grads.at(w)->type(), w->type());
  EXPECT_EQ(grads.at(b)->type(), b->type());
  EXPECT_EQ(ir::findGraphProblems(graph), std::vector<std::string>{});
  ASSERT_GT(graph.nodes().size(), forwardCount);
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const ir::Node& node = *graph.nodes()[i];
    EXPECT_EQ(node.placement().phase, i < forwardCount ? Phase::Forward : Phase::Backward)
        << node.name();
  }
  // The weight gradients come from ops emitted for the linear: on its IPU, at its line.
  for (const Value* grad : {grads.at(w), grads.at(b)}) {
    EXPECT_EQ(grad->producer()->placement().ipu, 1) << grad->producer()->name();
    EXPECT_EQ(grad->producer()->location().str(), "model.py:7");
  }
  EXPECT_EQ(grads.at(w)->producer()->kind(), OpKind::LinearGradWeight);
}

TEST(AutodiffTest, GradientsOfAValueUsedTwiceAreSummed) {
  Graph graph;
  Value* w = graph.addWeight("w", f32({3}), true);
  Value* product = graph.apply(OpKind::Mul, {w, w});
  Value* loss = graph.apply(OpKind::ReduceSum, {product}, meanOfAll(1));

  const auto grads = compiler::buildGradients(graph, loss, {w});

  ASSERT_EQ(grads.count(w), 1u);
  EXPECT_EQ(grads.at(w)->producer()->kind(), OpKind::Add);
}

TEST(AutodiffTest, ValuesTheLossDoesNotDependOnGetNoGradient) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 3}));
  Value* used = graph.addWeight("used", f32({3}), true);
  Value* unused = graph.addWeight("unused", f32({3}), true);
  Value* side = graph.apply(OpKind::Mul, {x, unused});
  graph.addOutput(side);
  Value* loss = graph.apply(OpKind::ReduceSum, {graph.apply(OpKind::Mul, {x, used})}, meanOfAll(2));

  const auto grads = compiler::buildGradients(graph, loss, {used, unused});

  EXPECT_EQ(grads.count(used), 1u);
  EXPECT_EQ(grads.count(unused), 0u);
  // Nothing was differentiated on the side branch.
  for (const auto& node : graph.nodes()) {
    if (node->placement().phase != Phase::Backward) continue;
    for (const Value* input : node->inputs()) {
      EXPECT_NE(input, side) << node->name() << " uses the side output";
    }
  }
}

TEST(AutodiffTest, LayerNormOnTheGradientPathKeepsItsStatistics) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 5}));
  Value* gamma = graph.addWeight("norm.weight", f32({5}), true);
  Value* beta = graph.addWeight("norm.bias", f32({5}), true);
  Value* y = graph.apply(OpKind::LayerNorm, {x, gamma, beta},
                         {{"normalized_ndim", int64_t{1}}, {"eps", 1e-5}});
  Value* loss = graph.apply(OpKind::ReduceSum, {y}, meanOfAll(2));

  const auto grads = compiler::buildGradients(graph, loss, {gamma, beta});

  EXPECT_EQ(grads.size(), 2u);
  EXPECT_EQ(loss->producer()->input(0)->producer()->kind(), OpKind::LayerNormTrain);
  EXPECT_EQ(ir::findGraphProblems(graph), std::vector<std::string>{});
}

TEST(AutodiffTest, MaxPoolOnTheGradientPathRecordsWhereItsMaximaAre) {
  Graph graph;
  Value* x = graph.addInput("x", f32({1, 2, 4, 4}));
  Value* scale = graph.addWeight("scale", f32({1}), true);
  Value* pooled = graph.apply(OpKind::MaxPool2d, {graph.apply(OpKind::Mul, {x, scale})},
                              {{"kernel", std::vector<int64_t>{2, 2}},
                               {"stride", std::vector<int64_t>{2, 2}},
                               {"padding", std::vector<int64_t>{0, 0}},
                               {"dilation", std::vector<int64_t>{1, 1}},
                               {"ceil_mode", false}});
  Value* loss = graph.apply(OpKind::ReduceSum, {pooled}, meanOfAll(4));

  compiler::buildGradients(graph, loss, {scale});

  const ir::Node* pool = loss->producer()->input(0)->producer();
  ASSERT_EQ(pool->kind(), OpKind::MaxPool2dTrain);
  ASSERT_EQ(pool->output(1)->users().size(), 1u);
  const ir::Node* grad = pool->output(1)->users()[0];
  EXPECT_EQ(grad->kind(), OpKind::MaxPool2dGrad);
  EXPECT_EQ(grad->output()->type(), x->type());
  EXPECT_EQ(ir::findGraphProblems(graph), std::vector<std::string>{});
}

// max_pool2d_grad records whether the windows can share an input element:
// where they cannot, each element of the gradient is one of dY's or zero, a
// float16 value when dY is float16, which its kernel then need not round.
TEST(AutodiffTest, MaxPoolGradientKnowsWhetherItsWindowsOverlap) {
  struct Case {
    std::vector<int64_t> kernel, stride, dilation;
    bool overlap;
  };
  for (const Case& c : {Case{{2, 2}, {2, 2}, {1, 1}, false}, Case{{3, 3}, {2, 2}, {1, 1}, true},
                        Case{{2, 3}, {2, 3}, {1, 1}, false}, Case{{2, 2}, {3, 2}, {2, 1}, false},
                        Case{{2, 2}, {2, 2}, {2, 1}, true}, Case{{1, 1}, {1, 1}, {1, 1}, false}}) {
    Graph graph;
    Value* x = graph.addInput("x", f32({1, 2, 9, 9}));
    Value* scale = graph.addWeight("scale", f32({1}), true);
    Value* pooled = graph.apply(OpKind::MaxPool2d, {graph.apply(OpKind::Mul, {x, scale})},
                                {{"kernel", c.kernel},
                                 {"stride", c.stride},
                                 {"padding", std::vector<int64_t>{0, 0}},
                                 {"dilation", c.dilation},
                                 {"ceil_mode", false}});
    Value* loss = graph.apply(OpKind::ReduceSum, {pooled}, meanOfAll(4));
    compiler::buildGradients(graph, loss, {scale});
    const ir::Node* grad = loss->producer()->input(0)->producer()->output(1)->users()[0];
    ASSERT_EQ(grad->kind(), OpKind::MaxPool2dGrad);
    EXPECT_EQ(grad->attrs().getBool("windows_overlap"), c.overlap)
        << "kernel " << c.kernel[0] << "x" << c.kernel[1] << ", stride " << c.stride[0] << "x"
        << c.stride[1] << ", dilation " << c.dilation[0] << "x" << c.dilation[1];
    EXPECT_EQ(ir::selectsInputValues(*grad), !c.overlap);
  }
  // Adaptive pooling: windows overlap when an output size does not divide the input's.
  for (const auto& [size, overlap] : {std::pair{std::vector<int64_t>{3, 3}, false},
                                      std::pair{std::vector<int64_t>{4, 3}, true}}) {
    Graph graph;
    Value* x = graph.addInput("x", f32({1, 2, 9, 9}));
    Value* scale = graph.addWeight("scale", f32({1}), true);
    const ir::Node* pool = graph.addNode(
        OpKind::AdaptiveMaxPool2d, {graph.apply(OpKind::Mul, {x, scale})}, {{"output_size", size}});
    Value* loss = graph.apply(OpKind::ReduceSum, {pool->output(0)}, meanOfAll(4));
    compiler::buildGradients(graph, loss, {scale});
    const ir::Node* grad = pool->output(1)->users()[0];
    EXPECT_EQ(grad->attrs().getBool("windows_overlap"), overlap) << size[0] << "x" << size[1];
  }
}

TEST(AutodiffTest, AnOpWithoutAGradientRuleIsUnsupportedNamingItAndItsLine) {
  // softmax_grad has no rule (popsim does not differentiate twice).
  Graph graph;
  Value* w = graph.addWeight("w", f32({2, 3}), true);
  Value* y = graph.apply(OpKind::Softmax, {w}, {{"dim", int64_t{1}}});
  Value* twice = graph.apply(OpKind::SoftmaxGrad, {y, y}, {{"dim", int64_t{1}}}, kModelLine);
  Value* loss = graph.apply(OpKind::ReduceSum, {twice}, meanOfAll(2));

  const CoreError error =
      testing::captureError([&] { compiler::buildGradients(graph, loss, {w}); });

  EXPECT_EQ(error.kind(), ErrorKind::Unsupported);
  EXPECT_TRUE(testing::contains(error.what(), "Unsupported op in the backward pass: popsim has "
                                              "no gradient for softmax_grad at model.py:7"));
  EXPECT_TRUE(testing::contains(error.what(), "detach its input"));
}

TEST(AutodiffTest, NoGradientFlowsThroughStopGradient) {
  Graph graph;
  Value* stopped = graph.addWeight("stopped", f32({3}), true);
  Value* trained = graph.addWeight("trained", f32({3}), true);
  Value* detached = graph.apply(OpKind::StopGradient, {stopped});
  Value* product = graph.apply(OpKind::Mul, {detached, trained});
  Value* loss = graph.apply(OpKind::ReduceSum, {product}, meanOfAll(1));

  const auto grads = compiler::buildGradients(graph, loss, {stopped, trained});

  EXPECT_EQ(grads.count(stopped), 0u);
  ASSERT_EQ(grads.count(trained), 1u);
}

// slice_update(x, u): the gradient of x is the output's with the slice
// zeroed, the gradient of u is the output's slice.
TEST(AutodiffTest, SliceUpdateSplitsTheGradientAtTheSlice) {
  Graph graph;
  Value* x = graph.addWeight("x", f32({4, 3}), true);
  Value* u = graph.addWeight("u", f32({2, 3}), true);
  const ir::Attributes rows = {
      {"dim", int64_t{0}}, {"start", int64_t{1}}, {"end", int64_t{4}}, {"step", int64_t{2}}};
  Value* updated = graph.apply(OpKind::SliceUpdate, {x, u}, rows);
  Value* loss = graph.apply(OpKind::ReduceSum, {updated}, meanOfAll(2));

  const auto grads = compiler::buildGradients(graph, loss, {x, u});

  EXPECT_EQ(ir::findGraphProblems(graph), std::vector<std::string>{});
  ASSERT_EQ(grads.count(x), 1u);
  ASSERT_EQ(grads.count(u), 1u);
  EXPECT_EQ(grads.at(x)->producer()->kind(), OpKind::SliceUpdate);
  EXPECT_EQ(grads.at(x)->type(), x->type());
  EXPECT_EQ(grads.at(u)->producer()->kind(), OpKind::Slice);
  EXPECT_EQ(grads.at(u)->type(), u->type());
}

} // namespace
} // namespace popsim
