// The verifier: silent on valid graphs, and one precise message per broken
// invariant (graphs are broken here through the editing API, as a buggy pass
// would break them).

#include "common/error.h"
#include "ir/graph.h"
#include "ir/verifier.h"
#include "test_utils.h"

#include <gtest/gtest.h>

namespace popsim {
namespace {

using ir::Graph;
using ir::OpKind;
using ir::Value;
using testing::f32;

TEST(VerifierTest, ValidGraphHasNoProblems) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 4}));
  Value* w = graph.addWeight("fc.weight", f32({3, 4}), true);
  Value* b = graph.addWeight("fc.bias", f32({3}), true);
  Value* c = graph.addScalarConstant(2.0f);
  Value* h = graph.apply(OpKind::Linear, {x, w, b});
  Value* r = graph.apply(OpKind::Mul, {graph.apply(OpKind::Relu, {h}), c});
  graph.addOutput(graph.apply(OpKind::Softmax, {r}, {{"dim", int64_t{1}}}));
  graph.addOutput(x);
  graph.addOutput(w);
  EXPECT_EQ(ir::findGraphProblems(graph), std::vector<std::string>{});
  EXPECT_NO_THROW(ir::verifyGraph(graph, "test"));
}

TEST(VerifierTest, EmptyGraphIsValid) {
  Graph graph;
  EXPECT_TRUE(ir::findGraphProblems(graph).empty());
}

TEST(VerifierTest, OutputTypeNoLongerMatchingIsReportedWithBothTypes) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 4}));
  Value* y = graph.addInput("y", f32({3, 4}));
  Value* r = graph.apply(OpKind::Relu, {x}, {}, {"/work/model.py", 5, "forward", "", ""});
  graph.addOutput(r);

  graph.replaceInput(r->producer(), 0, y);

  EXPECT_EQ(ir::findGraphProblems(graph),
            std::vector<std::string>{"node #0 relu at /work/model.py:5: output 0 has type "
                                     "f32[2,4] but the schema infers f32[3,4]."});
}

TEST(VerifierTest, InferenceFailureIsReportedWithTheNode) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 4}));
  Value* other = graph.addInput("other", f32({2, 5}));
  Value* w = graph.addWeight("fc.weight", f32({3, 4}), true);
  Value* r = graph.apply(OpKind::Relu, {x});
  Value* h = graph.apply(OpKind::Linear, {r, w});
  graph.addOutput(h);

  graph.replaceInput(h->producer(), 0, other);

  EXPECT_EQ(ir::findGraphProblems(graph),
            std::vector<std::string>{"node #1 linear: linear: the input f32[2,5] has 5 features "
                                     "but the weight f32[3,4] expects 4."});
}

TEST(VerifierTest, ABrokenNodeIsReportedOnceNotAtEveryLaterUse) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 4}));
  Value* other = graph.addInput("other", f32({2, 5}));
  Value* w = graph.addWeight("fc.weight", f32({3, 4}), true);
  Value* h = graph.apply(OpKind::Linear, {x, w});
  Value* r = graph.apply(OpKind::Relu, {h});
  graph.addOutput(graph.apply(OpKind::Exp, {r}));
  graph.addOutput(h);

  graph.replaceInput(h->producer(), 0, other);

  const std::vector<std::string> problems = ir::findGraphProblems(graph);
  ASSERT_EQ(problems.size(), 1u) << ::testing::PrintToString(problems);
  EXPECT_TRUE(testing::contains(problems[0], "node #0 linear: linear: the input f32[2,5]"));
}

TEST(VerifierTest, UseBeforeDefinitionIsReported) {
  Graph graph;
  Value* x = graph.addInput("x", f32({4}));
  Value* first = graph.apply(OpKind::Relu, {x});
  Value* second = graph.apply(OpKind::Exp, {x});
  graph.addOutput(first);
  graph.addOutput(second);
  // Node #0 now reads the output of node #1, which runs after it.
  graph.replaceInput(first->producer(), 0, second);
  EXPECT_EQ(ir::findGraphProblems(graph),
            std::vector<std::string>{"node #0 relu: input 0 is used before it is defined."});
}

TEST(VerifierTest, VerifyGraphThrowsAnInternalErrorListingTheProblems) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 4}));
  Value* y = graph.addInput("y", f32({3, 4}));
  Value* r = graph.apply(OpKind::Relu, {x}, {}, {"/work/model.py", 5, "forward", "", ""});
  Value* t = graph.apply(OpKind::Tanh, {x});
  graph.addOutput(r);
  graph.addOutput(t);
  graph.replaceInput(r->producer(), 0, y);
  graph.replaceInput(t->producer(), 0, y);

  const CoreError error = testing::captureError([&] { ir::verifyGraph(graph, "pass 'broken'"); });
  EXPECT_EQ(error.kind(), ErrorKind::Internal);
  const std::string message = error.what();
  EXPECT_TRUE(testing::contains(message, "the IR graph is invalid after pass 'broken':\n"));
  EXPECT_TRUE(testing::contains(message, "\n  node #0 relu at /work/model.py:5: output 0 has type "
                                         "f32[2,4] but the schema infers f32[3,4].\n  node #1 "
                                         "tanh: output 0 has type f32[2,4] but the schema infers "
                                         "f32[3,4]."));
  EXPECT_TRUE(testing::contains(message, "Please report this as a popsim bug."));
}

TEST(VerifierTest, VerifyGraphWithoutContext) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2}));
  Value* y = graph.addInput("y", f32({3}));
  Value* r = graph.apply(OpKind::Sqrt, {x});
  graph.addOutput(r);
  graph.replaceInput(r->producer(), 0, y);
  const CoreError error = testing::captureError([&] { ir::verifyGraph(graph); });
  EXPECT_EQ(error.kind(), ErrorKind::Internal);
  EXPECT_TRUE(
      testing::contains(error.what(), "the IR graph is invalid:\n  node #0 sqrt: output 0"));
}

} // namespace
} // namespace popsim
