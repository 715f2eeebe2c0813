// Compiled executables end to end: weights in, device iterations with every
// output mode, results against the reference kernels and hand computation,
// the errors users see, simulated cycles and the program listing.

#include "common/error.h"
#include "costs/cost_model.h"
#include "ir/graph.h"
#include "ir/printer.h"
#include "kernels/reference/reference_ops.h"
#include "runtime/executable.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

namespace popsim {
namespace {

using compiler::OutputMode;
using ir::Graph;
using ir::OpKind;
using ir::Value;
using runtime::CompileOptions;
using runtime::Executable;
using runtime::TensorView;
using testing::f32;

constexpr int64_t kIterations = 3;

TensorView viewOf(std::vector<float>& values, ir::Shape shape) {
  return {values.data(), ir::DType::Float32, std::move(shape)};
}

// x[2,4] -> linear(fc) -> relu -> softmax(dim 1), and the sum of the relu
// output as a second, scalar output.
std::unique_ptr<Graph> buildClassifier() {
  auto graph = std::make_unique<Graph>();
  Value* x = graph->addInput("x", f32({2, 4}));
  Value* w = graph->addWeight("fc.weight", f32({3, 4}), true);
  Value* b = graph->addWeight("fc.bias", f32({3}), true);
  Value* h = graph->apply(OpKind::Linear, {x, w, b}, {}, {"model.py", 3, "forward", "", ""});
  Value* r = graph->apply(OpKind::Relu, {h});
  graph->addOutput(graph->apply(OpKind::Softmax, {r}, {{"dim", int64_t{1}}}));
  graph->addOutput(graph->apply(OpKind::ReduceSum, {r},
                                {{"dims", std::vector<int64_t>{0, 1}}, {"keepdim", false}}));
  return graph;
}

using WeightValues = std::map<std::string, std::vector<float>>;

// Runs `graph` for one iteration node by node with the reference kernels.
std::vector<std::vector<float>> referenceRun(const Graph& graph,
                                             const std::vector<std::vector<float>>& inputs,
                                             const WeightValues& weights) {
  std::map<const Value*, std::vector<uint8_t>> buffers;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    buffers[graph.inputs()[i]] = testing::bytesOf(inputs[i]);
  }
  for (const Value* weight : graph.weights()) {
    buffers[weight] = testing::bytesOf(weights.at(weight->name()));
  }
  for (const Value* constant : graph.constants()) {
    buffers[constant] = constant->constantData();
  }
  for (const auto& node : graph.nodes()) {
    std::vector<void*> in;
    for (const Value* input : node->inputs()) {
      in.push_back(buffers.at(input).data());
    }
    std::vector<void*> out;
    for (const Value* output : node->outputs()) {
      buffers[output].assign(output->type().bytes(), 0);
      out.push_back(buffers[output].data());
    }
    kernels::reference::evaluate(*node, in, out);
  }
  std::vector<std::vector<float>> results;
  for (const Value* output : graph.outputs()) {
    const std::vector<uint8_t>& bytes = buffers.at(output);
    std::vector<float> values(bytes.size() / sizeof(float));
    std::memcpy(values.data(), bytes.data(), bytes.size());
    results.push_back(values);
  }
  return results;
}

// softmax(relu(x W^T + b)) and sum(relu(x W^T + b)) for x[2,4], in double.
std::pair<std::vector<float>, float> handComputed(const float* x, const std::vector<float>& w,
                                                  const std::vector<float>& b) {
  std::vector<float> probabilities;
  double total = 0;
  for (int row = 0; row < 2; ++row) {
    double activations[3];
    double denominator = 0;
    double largest = 0;
    for (int j = 0; j < 3; ++j) {
      double sum = b[j];
      for (int k = 0; k < 4; ++k) {
        sum += static_cast<double>(x[row * 4 + k]) * w[j * 4 + k];
      }
      activations[j] = std::max(sum, 0.0);
      total += activations[j];
      largest = std::max(largest, activations[j]);
    }
    for (double a : activations) {
      denominator += std::exp(a - largest);
    }
    for (double a : activations) {
      probabilities.push_back(static_cast<float>(std::exp(a - largest) / denominator));
    }
  }
  return {probabilities, static_cast<float>(total)};
}

class ExecutableTest : public ::testing::Test {
protected:
  ExecutableTest()
      : graph_(buildClassifier()), weights_{{"fc.weight", testing::randomFloats(12, 1)},
                                            {"fc.bias", testing::randomFloats(3, 2, 0.0f, 0.5f)}},
        input_(testing::randomFloats(kIterations * 8, 3, -2.0f, 2.0f)) {}

  std::unique_ptr<Executable> compile(OutputMode mode, int64_t period = 1,
                                      int64_t iterations = kIterations, int64_t prefetchDepth = 0) {
    CompileOptions options;
    options.compiler.deviceIterations = iterations;
    options.compiler.output = {mode, period};
    options.memory.prefetchDepth = prefetchDepth;
    auto executable = Executable::compile(*graph_, options);
    for (auto& [name, values] : weights_) {
      executable->writeVariable(name, viewOf(values, graph_->findWeight(name)->type().shape));
    }
    return executable;
  }

  // Runs one call; returns the two outputs.
  std::pair<std::vector<float>, std::vector<float>> run(Executable& executable) {
    const std::vector<ir::TensorType> types = executable.outputHostTypes();
    std::vector<float> probabilities(static_cast<size_t>(types.at(0).numel()), -1.0f);
    std::vector<float> totals(static_cast<size_t>(types.at(1).numel()), -1.0f);
    executable.run({viewOf(input_, executable.inputHostTypes().at(0).shape)},
                   {viewOf(probabilities, types[0].shape), viewOf(totals, types[1].shape)});
    return {probabilities, totals};
  }

  // The reference outputs of iteration `iteration`.
  std::vector<std::vector<float>> expected(int64_t iteration) {
    const std::vector<float> batch(input_.begin() + iteration * 8,
                                   input_.begin() + (iteration + 1) * 8);
    return referenceRun(*graph_, {batch}, weights_);
  }

  std::unique_ptr<Graph> graph_;
  WeightValues weights_;
  std::vector<float> input_;
};

TEST_F(ExecutableTest, HostTypesStackIterations) {
  auto executable = compile(OutputMode::All);
  EXPECT_EQ(executable->inputHostTypes(), (std::vector<ir::TensorType>{f32({6, 4})}));
  EXPECT_EQ(executable->outputHostTypes(), (std::vector<ir::TensorType>{f32({6, 3}), f32({3})}));
  EXPECT_EQ(compile(OutputMode::Final)->outputHostTypes(),
            (std::vector<ir::TensorType>{f32({2, 3}), f32({})}));
  EXPECT_EQ(compile(OutputMode::Sum)->outputHostTypes(),
            (std::vector<ir::TensorType>{f32({2, 3}), f32({})}));
  // One returned iteration keeps the model's shapes.
  EXPECT_EQ(compile(OutputMode::EveryN, 3)->outputHostTypes(),
            (std::vector<ir::TensorType>{f32({2, 3}), f32({})}));
}

TEST_F(ExecutableTest, AllMatchesHandComputation) {
  auto executable = compile(OutputMode::All);
  const auto [probabilities, totals] = run(*executable);
  for (int64_t i = 0; i < kIterations; ++i) {
    const auto [expectedProbabilities, expectedTotal] =
        handComputed(input_.data() + i * 8, weights_["fc.weight"], weights_["fc.bias"]);
    EXPECT_TRUE(testing::allClose(probabilities.data() + i * 6, expectedProbabilities.data(), 6,
                                  1e-5, 1e-6))
        << "iteration " << i;
    EXPECT_TRUE(testing::allClose(totals.data() + i, &expectedTotal, 1, 1e-5, 1e-6))
        << "iteration " << i;
  }
}

TEST_F(ExecutableTest, AllMatchesTheReferenceKernels) {
  auto executable = compile(OutputMode::All);
  const auto [probabilities, totals] = run(*executable);
  for (int64_t i = 0; i < kIterations; ++i) {
    const auto reference = expected(i);
    EXPECT_TRUE(testing::allClose(probabilities.data() + i * 6, reference[0].data(), 6));
    EXPECT_TRUE(testing::allClose(totals.data() + i, reference[1].data(), 1));
  }
}

TEST_F(ExecutableTest, FinalReturnsTheLastIteration) {
  auto executable = compile(OutputMode::Final);
  const auto [probabilities, totals] = run(*executable);
  const auto reference = expected(kIterations - 1);
  ASSERT_EQ(probabilities.size(), 6u);
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_TRUE(testing::allClose(probabilities.data(), reference[0].data(), 6));
  EXPECT_TRUE(testing::allClose(totals.data(), reference[1].data(), 1));
}

TEST_F(ExecutableTest, EveryNReturnsEachPeriodsLastIteration) {
  {
    auto executable = compile(OutputMode::EveryN, 3);
    const auto [probabilities, totals] = run(*executable);
    const auto reference = expected(2);
    ASSERT_EQ(probabilities.size(), 6u);
    EXPECT_TRUE(testing::allClose(probabilities.data(), reference[0].data(), 6));
    EXPECT_TRUE(testing::allClose(totals.data(), reference[1].data(), 1));
  }
  {
    auto executable = compile(OutputMode::EveryN, 1);
    const auto [probabilities, totals] = run(*executable);
    ASSERT_EQ(probabilities.size(), 18u);
    for (int64_t i = 0; i < kIterations; ++i) {
      const auto reference = expected(i);
      EXPECT_TRUE(testing::allClose(probabilities.data() + i * 6, reference[0].data(), 6));
      EXPECT_TRUE(testing::allClose(totals.data() + i, reference[1].data(), 1));
    }
  }
}

TEST_F(ExecutableTest, EveryNWithFourIterationsAndPeriodTwo) {
  input_ = testing::randomFloats(4 * 8, 4, -2.0f, 2.0f);
  auto executable = compile(OutputMode::EveryN, 2, 4);
  EXPECT_EQ(executable->inputHostTypes()[0], f32({8, 4}));
  const auto [probabilities, totals] = run(*executable);
  ASSERT_EQ(probabilities.size(), 12u);
  ASSERT_EQ(totals.size(), 2u);
  for (int64_t slot = 0; slot < 2; ++slot) {
    const auto reference = expected(2 * slot + 1); // iterations 1 and 3
    EXPECT_TRUE(testing::allClose(probabilities.data() + slot * 6, reference[0].data(), 6));
    EXPECT_TRUE(testing::allClose(totals.data() + slot, reference[1].data(), 1));
  }
}

TEST_F(ExecutableTest, SumAddsAllIterations) {
  auto executable = compile(OutputMode::Sum);
  // Run twice: the second call must not add onto the first call's results.
  run(*executable);
  const auto [probabilities, totals] = run(*executable);
  std::vector<float> expectedProbabilities(6, 0.0f);
  float expectedTotal = 0;
  for (int64_t i = 0; i < kIterations; ++i) {
    const auto reference = expected(i);
    for (size_t k = 0; k < 6; ++k) {
      expectedProbabilities[k] += reference[0][k];
    }
    expectedTotal += reference[1][0];
  }
  ASSERT_EQ(probabilities.size(), 6u);
  EXPECT_TRUE(testing::allClose(probabilities.data(), expectedProbabilities.data(), 6, 1e-5, 1e-6));
  EXPECT_TRUE(testing::allClose(totals.data(), &expectedTotal, 1, 1e-5, 1e-6));
  // Each row of probabilities sums to 1 in every iteration, so to 3 in total.
  EXPECT_NEAR(probabilities[0] + probabilities[1] + probabilities[2], 3.0, 1e-5);
}

TEST_F(ExecutableTest, WeightsStartZeroedAndRoundTrip) {
  CompileOptions options;
  options.compiler.deviceIterations = kIterations;
  auto executable = Executable::compile(*graph_, options);
  std::vector<float> read(12, -1.0f);
  executable->readVariable("fc.weight", viewOf(read, {3, 4}));
  EXPECT_EQ(read, std::vector<float>(12, 0.0f));
  // With zero weights every class is equally likely and the relu sum is 0.
  const auto [probabilities, totals] = run(*executable);
  for (float p : probabilities) {
    EXPECT_FLOAT_EQ(p, 1.0f / 3.0f);
  }
  EXPECT_EQ(totals, std::vector<float>(3, 0.0f));

  std::vector<float> written = testing::randomFloats(12, 9);
  executable->writeVariable("fc.weight", viewOf(written, {3, 4}));
  executable->readVariable("fc.weight", viewOf(read, {3, 4}));
  EXPECT_EQ(read, written);
  ASSERT_EQ(executable->weights().size(), 2u);
  EXPECT_EQ(executable->weights()[0]->name(), "fc.weight");
  EXPECT_EQ(executable->weights()[1]->name(), "fc.bias");
}

TEST_F(ExecutableTest, WrongInputShapeNamesTheInputAndBothTypes) {
  auto executable = compile(OutputMode::All);
  std::vector<float> small(20);
  std::vector<float> probabilities(18);
  std::vector<float> totals(3);
  const std::vector<TensorView> outputs = {viewOf(probabilities, {6, 3}), viewOf(totals, {3})};

  CoreError error = testing::captureError([&] {
    executable->run({viewOf(small, {5, 4})}, outputs);
  });
  EXPECT_EQ(error.kind(), ErrorKind::InvalidInput);
  EXPECT_EQ(std::string(error.what()),
            "input 'x' has type f32[5,4] but the model was compiled for f32[6,4].");

  std::vector<int64_t> ids(24);
  error = testing::captureError([&] {
    executable->run({{ids.data(), ir::DType::Int64, {6, 4}}}, outputs);
  });
  EXPECT_EQ(error.kind(), ErrorKind::InvalidInput);
  EXPECT_EQ(std::string(error.what()),
            "input 'x' has type i64[6,4] but the model was compiled for f32[6,4].");

  error = testing::captureError([&] { executable->run({}, outputs); });
  EXPECT_EQ(error.kind(), ErrorKind::InvalidInput);
  EXPECT_EQ(std::string(error.what()), "the model takes 1 tensor input(s) but was given 0.");
  EXPECT_EQ(executable->lastRunCycles(), 0u);
}

TEST_F(ExecutableTest, WeightErrors) {
  auto executable = compile(OutputMode::All);
  std::vector<float> values(12);
  CoreError error = testing::captureError([&] {
    executable->writeVariable("fc.weight", viewOf(values, {4, 3}));
  });
  EXPECT_EQ(error.kind(), ErrorKind::InvalidInput);
  EXPECT_TRUE(testing::contains(error.what(), "weight 'fc.weight' was compiled as f32[3,4] but "
                                              "the host tensor is f32[4,3]."));

  error = testing::captureError([&] { executable->readVariable("fc.bias", viewOf(values, {12})); });
  EXPECT_EQ(error.kind(), ErrorKind::InvalidInput);
  EXPECT_EQ(std::string(error.what()),
            "weight 'fc.bias' is f32[3] but the host tensor is f32[12].");

  error =
      testing::captureError([&] { executable->writeVariable("fc.nope", viewOf(values, {12})); });
  EXPECT_EQ(error.kind(), ErrorKind::InvalidInput);
  EXPECT_EQ(std::string(error.what()), "the compiled model has no weight or state 'fc.nope'.");
  error = testing::captureError([&] { executable->readVariable("fc.nope", viewOf(values, {12})); });
  EXPECT_EQ(error.kind(), ErrorKind::InvalidInput);
  EXPECT_EQ(std::string(error.what()), "the compiled model has no weight or state 'fc.nope'.");
}

TEST_F(ExecutableTest, OutOfMemoryWhenTheIpuIsTiny) {
  CompileOptions options;
  options.system.memoryPerIpu = 4096;
  const CoreError error = testing::captureError([&] { Executable::compile(*graph_, options); });
  EXPECT_EQ(error.kind(), ErrorKind::OutOfMemory);
  EXPECT_TRUE(testing::contains(error.what(), "Out of memory on IPU 0: the program needs "));
  EXPECT_TRUE(testing::contains(error.what(), " but IPU 0 has 4,096 bytes (4.00 KiB)"));
}

TEST_F(ExecutableTest, InvalidOptionsAreRejectedAtCompileTime) {
  CompileOptions options;
  options.compiler.deviceIterations = 3;
  options.compiler.output = {OutputMode::EveryN, 2};
  CoreError error = testing::captureError([&] { Executable::compile(*graph_, options); });
  EXPECT_EQ(error.kind(), ErrorKind::Internal); // popsim.Options refuses it, naming the option
  EXPECT_TRUE(testing::contains(error.what(), "output_return_period 2"));

  options = {};
  options.system.numIpus = 65;
  error = testing::captureError([&] { Executable::compile(*graph_, options); });
  EXPECT_EQ(error.kind(), ErrorKind::InvalidOption);
  EXPECT_TRUE(testing::contains(error.what(), "between 1 and 64, got 65"));
}

TEST_F(ExecutableTest, CyclesOfARun) {
  auto executable = compile(OutputMode::All);
  EXPECT_EQ(executable->lastRunCycles(), 0u);
  run(*executable);
  EXPECT_GT(executable->lastRunCycles(), 0u);

  uint64_t perIteration = 0;
  for (const runtime::ProgramStep& step : executable->program()) {
    perIteration += step.cycles;
  }
  EXPECT_EQ(executable->computeCyclesPerIteration(), perIteration);
  const device::ChipSpec& chip = executable->options().system.spec();
  // Without prefetch, each iteration: its 32-byte input in, the program, both
  // outputs (24 + 4 bytes) out.
  const uint64_t in = costs::hostTransferCycles(32, chip);
  const uint64_t out = costs::hostTransferCycles(24, chip) + costs::hostTransferCycles(4, chip);
  EXPECT_EQ(executable->lastRunCycles(), kIterations * (in + perIteration + out));

  // Final mode copies outputs once.
  auto finalOnly = compile(OutputMode::Final);
  run(*finalOnly);
  EXPECT_EQ(finalOnly->lastRunCycles(), kIterations * (in + perIteration) + out);
}

TEST_F(ExecutableTest, PrefetchedInputsStreamWhileThePreviousIterationRuns) {
  const device::ChipSpec& chip = CompileOptions().system.spec();
  // With multibuffering (a buffering depth of 2 or more), the host's part of
  // an input runs ahead on the link; its bytes cross on the compute tiles
  // when its iteration starts.
  const uint64_t in = costs::hostLatencyCycles(chip);
  const uint64_t bytes = costs::hostDataCycles(32, chip);
  const uint64_t out = costs::hostTransferCycles(24, chip) + costs::hostTransferCycles(4, chip);
  for (int64_t depth : {2, 3}) {
    auto all = compile(OutputMode::All, 1, kIterations, depth);
    run(*all);
    const uint64_t program = all->computeCyclesPerIteration();
    // Inputs stream while the iteration before computes and returns its
    // outputs, which takes longer: only the first input's latency is on the
    // clock.
    ASSERT_GE(bytes + program + out, in);
    EXPECT_EQ(all->lastRunCycles(), in + kIterations * (bytes + program + out)) << depth;

    // Returning only the final outputs, the link is the bottleneck: input k
    // is ready at (k + 1) x in, and its iteration runs right after it.
    auto finalOnly = compile(OutputMode::Final, 1, kIterations, depth);
    run(*finalOnly);
    ASSERT_LT(bytes + program, in);
    EXPECT_EQ(finalOnly->lastRunCycles(), kIterations * in + bytes + program + out) << depth;

    // Events: input k on the link, overlapping iteration k-1.
    std::vector<uint64_t> inputStarts;
    for (const clock::TimelineEvent& event : finalOnly->lastTimeline()) {
      if (event.part == clock::EventPart::HostInput) inputStarts.push_back(event.start);
    }
    EXPECT_EQ(inputStarts, (std::vector<uint64_t>{0, in, 2 * in})) << depth;
  }
}

TEST_F(ExecutableTest, EachPrefetchBufferHoldsOneMicroBatchOfInputs) {
  for (int64_t depth : {0, 1, 3}) {
    auto executable = compile(OutputMode::All, 1, kIterations, depth);
    const memory::IpuMemoryReport& ipu = executable->memoryReport().ipus.at(0);
    for (const memory::MemoryCategory& category : ipu.categories) {
      if (category.name == "prefetch buffers") {
        EXPECT_EQ(category.bytes, 32u * static_cast<uint64_t>(depth));
        EXPECT_TRUE(category.alwaysLive);
      }
    }
  }
}

// Python validates user options (tests/python/test_options.py); C++ asserts.
TEST_F(ExecutableTest, ANegativePrefetchDepthBreaksAnInvariant) {
  const CoreError error =
      testing::captureError([&] { compile(OutputMode::All, 1, kIterations, -1); });
  EXPECT_EQ(error.kind(), ErrorKind::Internal);
  EXPECT_TRUE(testing::contains(error.what(), "prefetchDepth -1."));
}

TEST_F(ExecutableTest, ProgramListsOneStepPerNode) {
  auto executable = compile(OutputMode::All);
  const Graph& program = executable->graph();
  const std::vector<runtime::ProgramStep>& steps = executable->program();
  ASSERT_EQ(steps.size(), program.nodes().size());
  ASSERT_EQ(steps.size(), 4u);
  const std::vector<std::string> ops = {"linear", "relu", "softmax", "reduce_sum"};
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].op, ops[i]);
    EXPECT_EQ(steps[i].ipu, 0);
    EXPECT_EQ(
        steps[i].cycles,
        costs::estimateOpCost(*program.nodes()[i], executable->options().system.spec()).total());
    EXPECT_GT(steps[i].cycles, 0u);
    EXPECT_TRUE(steps[i].implementation.rfind("onednn", 0) == 0 ||
                steps[i].implementation == "reference")
        << steps[i].implementation;
  }
  EXPECT_EQ(steps[0].location, "model.py:3");
  EXPECT_EQ(steps[1].location, "<unknown location>");
}

TEST_F(ExecutableTest, CompileLeavesTheSourceGraphAlone) {
  graph_->apply(OpKind::Exp, {graph_->inputs()[0]}); // dead code in the source graph
  const std::string before = ir::printGraph(*graph_);
  auto executable = compile(OutputMode::All);
  EXPECT_EQ(ir::printGraph(*graph_), before);
  EXPECT_EQ(graph_->nodes().size(), 5u);
  EXPECT_EQ(executable->graph().nodes().size(), 4u); // the dead exp is gone
}

TEST(ExecutableViewsTest, ReshapesRunAsViews) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 6}));
  Value* cube = graph.apply(OpKind::Reshape, {x}, {{"shape", std::vector<int64_t>{2, 2, 3}}});
  Value* r = graph.apply(OpKind::Relu, {cube});
  Value* back = graph.apply(OpKind::Reshape, {r}, {{"shape", std::vector<int64_t>{2, 6}}});
  graph.addOutput(graph.apply(OpKind::Affine, {back}, {{"scale", 2.0}, {"shift", 1.0}}));
  graph.addOutput(back);
  CompileOptions options;
  options.compiler.deviceIterations = 2;
  auto executable = Executable::compile(graph, options);

  const std::vector<runtime::ProgramStep>& steps = executable->program();
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0].op, "reshape");
  EXPECT_EQ(steps[0].implementation, "view");
  EXPECT_EQ(steps[0].cycles, 0u);
  EXPECT_EQ(steps[2].implementation, "view");

  std::vector<float> input = testing::randomFloats(24, 5, -1.0f, 1.0f);
  std::vector<float> scaled(24, -9.0f);
  std::vector<float> flat(24, -9.0f);
  executable->run({viewOf(input, {4, 6})}, {viewOf(scaled, {4, 6}), viewOf(flat, {4, 6})});
  for (size_t i = 0; i < input.size(); ++i) {
    const float relu = std::max(input[i], 0.0f);
    EXPECT_FLOAT_EQ(flat[i], relu) << i;
    EXPECT_FLOAT_EQ(scaled[i], 2.0f * relu + 1.0f) << i;
  }
}

TEST(ExecutableViewsTest, OpsPlacedOnTwoIpus) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 4}));
  Value* w = graph.addWeight("w", f32({4}), true);
  Value* e = graph.apply(OpKind::Exp, {x});
  ir::Node* scale = graph.addNode(OpKind::Mul, {e, w});
  scale->setPlacement({"stage1", 1, 1});
  graph.addOutput(scale->output());
  CompileOptions options;
  options.system.numIpus = 2;
  options.compiler.deviceIterations = 2;
  auto executable = Executable::compile(graph, options);

  // exp on IPU 0, its result copied over the IPU-Links, mul on IPU 1.
  ASSERT_EQ(executable->program().size(), 3u);
  EXPECT_EQ(executable->program()[0].ipu, 0);
  EXPECT_EQ(executable->program()[1].op, "ipu_copy");
  EXPECT_EQ(executable->program()[1].implementation, "ipu-link");
  EXPECT_EQ(executable->program()[1].ipu, 1);
  EXPECT_EQ(executable->program()[2].ipu, 1);
  ASSERT_EQ(executable->memoryReport().ipus.size(), 2u);
  // The weight lives with its user on IPU 1.
  auto hasWeight = [](const memory::IpuMemoryReport& ipu) {
    for (const memory::TensorMemory& tensor : ipu.largestTensors) {
      if (tensor.description == "w (weight)") {
        return true;
      }
    }
    return false;
  };
  EXPECT_FALSE(hasWeight(executable->memoryReport().ipus[0]));
  EXPECT_TRUE(hasWeight(executable->memoryReport().ipus[1]));

  std::vector<float> weight = {1.0f, -2.0f, 0.5f, 3.0f};
  executable->writeVariable("w", viewOf(weight, {4}));
  std::vector<float> input = testing::randomFloats(16, 8);
  std::vector<float> output(16);
  executable->run({viewOf(input, {4, 4})}, {viewOf(output, {4, 4})});
  std::vector<float> expected(16);
  for (size_t i = 0; i < 16; ++i) {
    expected[i] = std::exp(input[i]) * weight[i % 4];
  }
  EXPECT_TRUE(testing::allClose(output.data(), expected.data(), 16));
}

TEST(ExecutableViewsTest, OutputsThatBecomeLeavesAfterSimplification) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 3}));
  Value* w = graph.addWeight("w", f32({3}), true);
  graph.addOutput(graph.apply(OpKind::Reshape, {x}, {{"shape", std::vector<int64_t>{2, 3}}}));
  graph.addOutput(graph.apply(OpKind::Affine, {w}, {{"scale", 1.0}, {"shift", 0.0}}));
  CompileOptions options;
  options.compiler.deviceIterations = 2;
  auto executable = Executable::compile(graph, options);
  EXPECT_TRUE(executable->program().empty());
  EXPECT_EQ(executable->outputHostTypes(), (std::vector<ir::TensorType>{f32({4, 3}), f32({6})}));

  std::vector<float> weight = {1.0f, 2.0f, 3.0f};
  executable->writeVariable("w", viewOf(weight, {3}));
  std::vector<float> input = testing::randomFloats(12, 6);
  std::vector<float> copied(12);
  std::vector<float> weights(6);
  executable->run({viewOf(input, {4, 3})}, {viewOf(copied, {4, 3}), viewOf(weights, {6})});
  EXPECT_EQ(copied, input);
  EXPECT_EQ(weights, (std::vector<float>{1, 2, 3, 1, 2, 3}));
}

TEST(ExecutableViewsTest, ScalarInputsOfSeveralMicroBatchesAndEmptyOutputsAreRejected) {
  Graph scalarInput;
  Value* s = scalarInput.addInput("s", f32({}));
  scalarInput.addOutput(scalarInput.apply(OpKind::Exp, {s}));
  EXPECT_NO_THROW(Executable::compile(scalarInput, {})); // one micro-batch: the scalar is it
  CompileOptions iterations;
  iterations.compiler.deviceIterations = 3;
  CoreError error = testing::captureError([&] { Executable::compile(scalarInput, iterations); });
  EXPECT_EQ(error.kind(), ErrorKind::Internal); // Python names the input first
  EXPECT_TRUE(
      testing::contains(error.what(), "input 's' is a scalar but a call has 3 micro-batches."));

  // As PopTorch's, a model may return nothing (a call returns None): it runs,
  // filling no output.
  Graph noOutputs;
  noOutputs.apply(OpKind::Relu, {noOutputs.addInput("x", f32({2}))});
  auto silent = Executable::compile(noOutputs, {});
  EXPECT_TRUE(silent->outputHostTypes().empty());
  std::vector<float> x = {-1.0f, 2.0f};
  EXPECT_NO_THROW(silent->run({viewOf(x, {2})}, {}));
}

// x[2,3] -> x with column 1 replaced by 10 * column 2, as a model output
// (returned once, OutputMode.Final) and as the update of input x (returned
// for every iteration, whatever the mode).
TEST(InputUpdateTest, SliceUpdateAndEveryIterationsInputUpdate) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 3}));
  const ir::Attributes column = {
      {"dim", int64_t{1}}, {"start", int64_t{1}}, {"end", int64_t{2}}, {"step", int64_t{1}}};
  Value* source = graph.apply(
      OpKind::Slice, {x},
      {{"dim", int64_t{1}}, {"start", int64_t{2}}, {"end", int64_t{3}}, {"step", int64_t{1}}});
  Value* scaled = graph.apply(OpKind::Affine, {source}, {{"scale", 10.0}, {"shift", 0.0}});
  Value* updated = graph.apply(OpKind::SliceUpdate, {x, scaled}, column);
  graph.addOutput(updated);
  graph.addInputUpdate(0, updated);
  EXPECT_EQ(graph.inputUpdates(), std::vector<size_t>{0});
  EXPECT_FALSE(graph.isInputUpdate(0));
  EXPECT_TRUE(graph.isInputUpdate(1));

  CompileOptions options;
  options.compiler.deviceIterations = 2;
  options.compiler.output = {OutputMode::Final, 1};
  auto executable = Executable::compile(graph, options);
  EXPECT_EQ(executable->outputHostTypes(), (std::vector<ir::TensorType>{f32({2, 3}), f32({4, 3})}));
  std::vector<float> input = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  std::vector<float> final(6, -1.0f);
  std::vector<float> written(12, -1.0f);
  executable->run({viewOf(input, {4, 3})}, {viewOf(final, {2, 3}), viewOf(written, {4, 3})});
  EXPECT_EQ(written, (std::vector<float>{0, 20, 2, 3, 50, 5, 6, 80, 8, 9, 110, 11}));
  EXPECT_EQ(final, (std::vector<float>{6, 80, 8, 9, 110, 11}));
}

} // namespace
} // namespace popsim
