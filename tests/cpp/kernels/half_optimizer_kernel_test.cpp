// A float16 optimizer step, rounded block by block as it writes
// (half_optimizer_kernel.h), against the step over whole tensors followed by
// a rounding pass over each (as HalfRoundingKernel runs any other op), bit
// for bit, over several steps: to nearest and stochastically, on a parameter
// long enough to be split over threads and whose length is no multiple of
// the block.

#include "ir/graph.h"
#include "ir/optimizer_hyperparameters.h"
#include "kernels/half_rounding.h"
#include "kernels/kernel_factory.h"
#include "kernels/reference/families.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace popsim {
namespace {

using ir::Attributes;
using ir::DType;
using ir::OpKind;
using ir::TensorType;

constexpr int64_t kElements = 70001; // over the parallel threshold, 17 blocks and a remainder

// Where the step's int64 count comes: SGD's last, Adam's after hyper, RMSprop has none.
enum class StepCount { None, AfterHyper, Last };

struct StepCase {
  std::string name;
  OpKind kind;
  Attributes attrs;
  std::vector<double> hyper;
  size_t states; // tensors like the parameter after param, grad, hyper (and step)
  StepCount step;
  bool halfStates = true;           // float16 state, or float32 state with a float16 parameter
  std::optional<uint64_t> key = {}; // stochastic rounding's key, or to nearest
};

std::ostream& operator<<(std::ostream& out, const StepCase& c) { return out << c.name; }

std::vector<StepCase> stepCases() {
  using namespace ir::hyper;
  const Attributes adam = {{"amsgrad", true},
                           {"maximize", false},
                           {"decoupled_weight_decay", true},
                           {"bias_correction", true}};
  const Attributes rmsprop = {
      {"centered", true}, {"has_momentum", true}, {"maximize", false}, {"tf_variant", false}};
  const Attributes sgd = {{"nesterov", true}, {"maximize", false}};
  std::vector<StepCase> cases = {
      {"sgd_momentum", OpKind::SgdUpdate, sgd, {0.05, 0.9, 0.0, 1e-3, 0.5}, 1, StepCount::Last},
      {"adamw_amsgrad",
       OpKind::AdamUpdate,
       adam,
       {1e-3, 0.9, 0.999, 1e-8, 0.01, 1.0},
       3,
       StepCount::AfterHyper},
      {"rmsprop_centred_momentum",
       OpKind::RmspropUpdate,
       rmsprop,
       {1e-3, 0.99, 1e-8, 0.0, 0.9, 1.0},
       3,
       StepCount::None},
      {"adamw_float32_state",
       OpKind::AdamUpdate,
       adam,
       {1e-3, 0.9, 0.999, 1e-8, 0.01, 1.0},
       3,
       StepCount::AfterHyper,
       false},
  };
  std::vector<StepCase> both;
  for (StepCase c : cases) {
    both.push_back(c);
    c.name += "_stochastic";
    c.key = 0x5eedull;
    both.push_back(c);
  }
  return both;
}

// The node's operands: param, grad, hyper[, step], then the state.
struct Operands {
  std::vector<std::vector<float>> floats; // param, grad, states
  std::vector<double> hyper;
  int64_t step = 1;

  std::vector<void*> pointers(const StepCase& c) {
    std::vector<void*> result = {floats[0].data(), floats[1].data(), hyper.data()};
    if (c.step == StepCount::AfterHyper) result.push_back(&step);
    for (size_t s = 0; s < c.states; ++s)
      result.push_back(floats[2 + s].data());
    if (c.step == StepCount::Last) result.push_back(&step);
    return result;
  }
};

class HalfOptimizerKernelTest : public ::testing::TestWithParam<StepCase> {};

TEST_P(HalfOptimizerKernelTest, BlockwiseRoundingGivesTheBitsOfWholeTensorPasses) {
  const StepCase& c = GetParam();
  const TensorType half{DType::Float16, {kElements}};
  const TensorType stateType{c.halfStates ? DType::Float16 : DType::Float32, {kElements}};
  ir::Graph graph;
  std::vector<ir::Value*> values = {
      graph.addInput("param", half), graph.addInput("grad", half),
      graph.addInput("hyper", {DType::Float64, {static_cast<int64_t>(c.hyper.size())}})};
  const TensorType stepType{DType::Int64, {}};
  if (c.step == StepCount::AfterHyper) values.push_back(graph.addInput("step", stepType));
  for (size_t s = 0; s < c.states; ++s)
    values.push_back(graph.addInput("state" + std::to_string(s), stateType));
  if (c.step == StepCount::Last) values.push_back(graph.addInput("step", stepType));
  const ir::Node& node = *graph.addNode(c.kind, values, c.attrs);

  Operands fused;
  fused.hyper = c.hyper;
  for (size_t t = 0; t < 2 + c.states; ++t) {
    // Moments are non-negative where the step takes their square root.
    const float low = t >= 2 && c.kind != OpKind::SgdUpdate ? 0.0f : -1.0f;
    fused.floats.push_back(
        testing::randomFloats(kElements, static_cast<uint32_t>(40 + t), low, 1.0f));
    if (t < 2 || c.halfStates) kernels::roundToHalf(fused.floats.back().data(), kElements);
  }
  Operands whole = fused;

  kernels::KernelRequest request{node, {}, {}, dnnl::engine(dnnl::engine::kind::cpu, 0)};
  const std::vector<void*> fusedPointers = fused.pointers(c);
  for (size_t i = 0; i < fusedPointers.size(); ++i)
    request.inputs.push_back({fusedPointers[i], node.input(i)->type()});
  request.stochasticRoundingKey = c.key;
  auto kernel = kernels::createKernel(request);
  EXPECT_EQ(kernel->implementation(), "reference+f16 (blockwise)");

  const std::vector<void*> wholePointers = whole.pointers(c);
  std::vector<float*> wholeHalf = {whole.floats[0].data()};
  if (c.halfStates) {
    for (size_t s = 0; s < c.states; ++s)
      wholeHalf.push_back(whole.floats[2 + s].data());
  }
  dnnl::stream stream(request.engine);
  for (uint64_t draw = 0; draw < 3; ++draw) {
    kernel->run(stream);
    kernels::reference::optimizer(node, wholePointers, {});
    for (size_t k = 0; k < wholeHalf.size(); ++k) {
      if (c.key.has_value()) {
        kernels::roundToHalfStochastically(wholeHalf[k], kElements, *c.key + k, draw);
      } else {
        kernels::roundToHalf(wholeHalf[k], kElements);
      }
    }
    for (size_t t = 0; t < fused.floats.size(); ++t) {
      ASSERT_EQ(std::memcmp(fused.floats[t].data(), whole.floats[t].data(), kElements * 4), 0)
          << "tensor " << t << " after step " << draw + 1;
    }
    ++fused.step;
    ++whole.step;
  }
}

INSTANTIATE_TEST_SUITE_P(Steps, HalfOptimizerKernelTest, ::testing::ValuesIn(stepCases()),
                         [](const auto& testInfo) { return testInfo.param.name; });

} // namespace
} // namespace popsim
