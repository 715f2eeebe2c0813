// Training executables end to end against hand computation: the device loop
// runs gradientAccumulation micro-batches then one update per device
// iteration, the next iteration sees the updated weights, and accumulators
// are cleared after each step.

#include "ir/graph.h"
#include "ir/optimizer_hyperparameters.h"
#include "runtime/executable.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <vector>

namespace popsim {
namespace {

using compiler::OutputMode;
using compiler::ProgramKind;
using ir::Graph;
using ir::OpKind;
using ir::Value;
using runtime::CompileOptions;
using runtime::Executable;
using testing::f32;

constexpr int64_t kRows = 2, kIn = 3, kOut = 2;

// loss = sum((x W^T + b)^2) for x[2,3], W[2,3], b[2].
std::unique_ptr<Graph> buildSquaredLinear() {
  auto graph = std::make_unique<Graph>();
  Value* x = graph->addInput("x", f32({kRows, kIn}));
  Value* w = graph->addWeight("fc.weight", f32({kOut, kIn}), true);
  Value* b = graph->addWeight("fc.bias", f32({kOut}), true);
  Value* y = graph->apply(OpKind::Linear, {x, w, b});
  Value* loss = graph->apply(OpKind::ReduceSum, {graph->apply(OpKind::Mul, {y, y})},
                             {{"dims", std::vector<int64_t>{0, 1}}, {"keepdim", false}});
  graph->addOutput(loss);
  graph->setLoss(loss);
  return graph;
}

struct Weights {
  std::vector<double> w, b;
};

// The loss of one micro-batch and its gradients, in double.
double lossAndGradients(const float* x, const Weights& weights, Weights& grads) {
  double loss = 0;
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t o = 0; o < kOut; ++o) {
      double y = weights.b[o];
      for (int64_t i = 0; i < kIn; ++i)
        y += weights.w[o * kIn + i] * x[r * kIn + i];
      loss += y * y;
      grads.b[o] += 2 * y;
      for (int64_t i = 0; i < kIn; ++i)
        grads.w[o * kIn + i] += 2 * y * x[r * kIn + i];
    }
  }
  return loss;
}

class TrainingExecutableTest : public ::testing::Test {
protected:
  TrainingExecutableTest() : graph_(buildSquaredLinear()) {
    const auto w = testing::randomFloats(kOut * kIn, 1);
    const auto b = testing::randomFloats(kOut, 2);
    initial_ = {std::vector<double>(w.begin(), w.end()), std::vector<double>(b.begin(), b.end())};
  }

  std::unique_ptr<Executable> compileSgd(int64_t iterations, int64_t accumulation, double lr,
                                         double momentum,
                                         memory::TensorLocation weightLocation = {}) {
    CompileOptions options;
    options.memory.weights = weightLocation;
    options.compiler.program = ProgramKind::Training;
    options.compiler.deviceIterations = iterations;
    options.compiler.gradientAccumulation = accumulation;
    options.compiler.output = {OutputMode::All, 1};
    options.compiler.training.optimizer = compiler::OptimizerKind::Sgd;
    options.compiler.training.groups.push_back({{"fc.weight", "fc.bias"}, momentum != 0});

    auto executable = Executable::compile(*graph_, options);
    std::vector<float> w(initial_.w.begin(), initial_.w.end());
    std::vector<float> b(initial_.b.begin(), initial_.b.end());
    executable->writeVariable("fc.weight", {w.data(), ir::DType::Float32, {kOut, kIn}});
    executable->writeVariable("fc.bias", {b.data(), ir::DType::Float32, {kOut}});
    std::vector<double> hyper(ir::hyper::SgdCount, 0.0);
    hyper[ir::hyper::SgdLr] = lr;
    hyper[ir::hyper::SgdMomentum] = momentum;
    hyper[ir::hyper::SgdGradScale] = 1.0 / static_cast<double>(accumulation); // Mean
    executable->writeVariable("optimizer/group0/hyper",
                              {hyper.data(), ir::DType::Float64, {ir::hyper::SgdCount}});
    return executable;
  }

  // Runs one call on `microBatches` stacked micro-batches; returns the losses.
  std::vector<float> run(Executable& executable, const std::vector<float>& x,
                         int64_t microBatches) {
    std::vector<float> losses(static_cast<size_t>(microBatches), -1.0f);
    std::vector<float> input = x;
    executable.run({{input.data(), ir::DType::Float32, {microBatches * kRows, kIn}}},
                   {{losses.data(), ir::DType::Float32, {microBatches}}});
    return losses;
  }

  std::vector<float> read(const Executable& executable, const std::string& name, ir::Shape shape) {
    std::vector<float> values(static_cast<size_t>(ir::elementCount(shape)));
    executable.readVariable(name, {values.data(), ir::DType::Float32, std::move(shape)});
    return values;
  }

  void expectWeights(const Executable& executable, const Weights& expected) {
    const auto w = read(executable, "fc.weight", {kOut, kIn});
    const auto b = read(executable, "fc.bias", {kOut});
    const std::vector<float> expectedW(expected.w.begin(), expected.w.end());
    const std::vector<float> expectedB(expected.b.begin(), expected.b.end());
    EXPECT_TRUE(testing::allClose(w.data(), expectedW.data(), kOut * kIn));
    EXPECT_TRUE(testing::allClose(b.data(), expectedB.data(), kOut));
  }

  // The weights after one plain SGD step on the mean gradient of
  // `accumulation` micro-batches of `x`; checks each micro-batch's loss
  // against `losses` when given.
  Weights sgdStep(const std::vector<float>& x, int64_t accumulation, double lr,
                  const std::vector<float>* losses = nullptr) const {
    Weights grads{std::vector<double>(kOut * kIn, 0.0), std::vector<double>(kOut, 0.0)};
    for (int64_t m = 0; m < accumulation; ++m) {
      const double loss = lossAndGradients(x.data() + m * kRows * kIn, initial_, grads);
      if (losses != nullptr) {
        EXPECT_NEAR((*losses)[m], loss, 1e-5 * std::abs(loss)) << "micro-batch " << m;
      }
    }
    Weights expected = initial_;
    for (size_t i = 0; i < expected.w.size(); ++i)
      expected.w[i] -= lr * grads.w[i] / static_cast<double>(accumulation);
    for (size_t i = 0; i < expected.b.size(); ++i)
      expected.b[i] -= lr * grads.b[i] / static_cast<double>(accumulation);
    return expected;
  }

  std::unique_ptr<Graph> graph_;
  Weights initial_;
};

TEST_F(TrainingExecutableTest, AccumulatedMeanGradientStepsOnce) {
  constexpr int64_t kAccumulation = 3;
  constexpr double kLr = 0.05;
  auto executable = compileSgd(1, kAccumulation, kLr, 0.0);
  const auto x = testing::randomFloats(kAccumulation * kRows * kIn, 3);

  const std::vector<float> losses = run(*executable, x, kAccumulation);

  expectWeights(*executable, sgdStep(x, kAccumulation, kLr, &losses));
  // The accumulators are clear for the next step.
  for (float value : read(*executable, "fc.weight/accumulator", {kOut, kIn})) {
    EXPECT_EQ(value, 0.0f);
  }
}

// Off chip, each op streams in the weights it reads just before it runs and
// streams out those it writes just after: the forward's linear reads both
// (one transfer of 64 + 64 aligned bytes) and each SGD update reads and
// writes its own. Streaming Memory: 3,000 cycles + bytes x 1.33 GHz / 8 GB/s.
TEST_F(TrainingExecutableTest, OffChipWeightsStreamAroundEachOpThatUsesThem) {
  constexpr double kLr = 0.05;
  memory::TensorLocation offChip;
  offChip.onChip = false;
  constexpr int64_t kAccumulation = 2;
  auto executable = compileSgd(1, kAccumulation, kLr, 0.0, offChip);
  const auto x = testing::randomFloats(kAccumulation * kRows * kIn, 7);
  run(*executable, x, kAccumulation);
  expectWeights(*executable, sgdStep(x, kAccumulation, kLr));

  const memory::IpuMemoryReport& memory = executable->memoryReport().ipus.at(0);
  ASSERT_EQ(memory.streamingMemory.size(), 1u);
  EXPECT_EQ(memory.streamingMemory[0].name, "weights");
  EXPECT_EQ(memory.streamingMemory[0].bytes, 128u);

  std::vector<std::pair<compiler::TaskKind, uint64_t>> streamed;
  for (const clock::TimelineEvent& event : executable->lastTimeline()) {
    if (event.part == clock::EventPart::StreamingMemory) {
      streamed.emplace_back(event.kind, event.end - event.start);
    }
  }
  const uint64_t both = 3000 + 22; // ceil(128 x 0.16625)
  const uint64_t one = 3000 + 11;  // ceil(64 x 0.16625)
  EXPECT_EQ(streamed, (std::vector<std::pair<compiler::TaskKind, uint64_t>>{
                          {compiler::TaskKind::ForwardBackward, both},
                          {compiler::TaskKind::ForwardBackward, both},
                          {compiler::TaskKind::Update, 2 * one},
                          {compiler::TaskKind::Update, 2 * one}}));
}

TEST_F(TrainingExecutableTest, EachDeviceIterationSeesTheWeightsOfTheStepBefore) {
  constexpr int64_t kIterations = 3;
  constexpr double kLr = 0.02, kMomentum = 0.9;
  auto executable = compileSgd(kIterations, 1, kLr, kMomentum);
  const auto x = testing::randomFloats(kIterations * kRows * kIn, 4);

  const std::vector<float> losses = run(*executable, x, kIterations);

  Weights weights = initial_;
  Weights buffer{std::vector<double>(kOut * kIn, 0.0), std::vector<double>(kOut, 0.0)};
  for (int64_t step = 0; step < kIterations; ++step) {
    Weights grads{std::vector<double>(kOut * kIn, 0.0), std::vector<double>(kOut, 0.0)};
    const double loss = lossAndGradients(x.data() + step * kRows * kIn, weights, grads);
    EXPECT_NEAR(losses[step], loss, 1e-5 * std::abs(loss)) << "step " << step;
    // PyTorch's SGD: the first step's buffer is the gradient itself.
    auto update = [&](std::vector<double>& param, std::vector<double>& momentum,
                      const std::vector<double>& grad) {
      for (size_t i = 0; i < param.size(); ++i) {
        momentum[i] = step == 0 ? grad[i] : kMomentum * momentum[i] + grad[i];
        param[i] -= kLr * momentum[i];
      }
    };
    update(weights.w, buffer.w, grads.w);
    update(weights.b, buffer.b, grads.b);
  }
  expectWeights(*executable, weights);
  int64_t step = -1;
  executable->readVariable("optimizer/group0/step", {&step, ir::DType::Int64, {}});
  EXPECT_EQ(step, kIterations);
}

} // namespace
} // namespace popsim
