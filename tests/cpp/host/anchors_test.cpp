// The anchors' plan both languages share: gradients, variables and the
// optimizer's state by the names the caller gives (PopTorch's, from Python),
// and the names getTensorNames lists.

#include "host/anchors.h"

#include "common/error.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace popsim {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

// The message of the popsim::CoreError `body` throws (the test fails when it throws none).
template <typename Body> std::string messageOf(Body&& body) {
  return testing::captureError(std::forward<Body>(body)).what();
}

host::SessionOptions anchoring(const Pairs& anchors) {
  host::SessionOptions options;
  for (const auto& [shortName, longName] : anchors)
    options.anchors.push_back({shortName, longName, std::nullopt, 1});
  return options;
}

const std::vector<std::string> kTrained = {"fc.weight", "fc.bias"};
const std::vector<std::string> kWeights = {"fc.weight", "fc.bias"};
const std::vector<std::string> kOptimizerState = {"Accl1___model.fc.bias",
                                                  "learningRate___specific___model.fc.bias"};

TEST(AnchorsTest, OptimizerStateIsAKindOfItsOwn) {
  const host::AnchorPlan plan =
      host::planAnchors(anchoring({{"grad", "Gradient___fc.bias"},
                                   {"weight", "UpdatedVar___fc.weight"},
                                   {"moment", "Accl1___model.fc.bias"},
                                   {"lr", "learningRate___specific___model.fc.bias"}}),
                        true, kTrained, kWeights, kOptimizerState);
  EXPECT_EQ(plan.gradients, (Pairs{{"grad", "fc.bias"}}));
  EXPECT_EQ(plan.variables, (Pairs{{"weight", "fc.weight"}}));
  EXPECT_EQ(plan.optimizerState, (Pairs{{"moment", "Accl1___model.fc.bias"},
                                        {"lr", "learningRate___specific___model.fc.bias"}}));
}

TEST(AnchorsTest, OptimizerStateNamesAreKnownOnlyWhenGivenAndTraining) {
  // Without the names (the C++ API's case) the name is unknown, and the
  // message offers the model's names.
  EXPECT_EQ(
      messageOf([] {
        host::planAnchors(anchoring({{"m", "Accl1___model.fc.bias"}}), true, kTrained, kWeights);
      }),
      "anchorTensor: 'Accl1___model.fc.bias' is not a parameter or buffer of the model. "
      "getTensorNames() lists the names a compiled model can anchor.");
  // With them, a near miss is offered the closest state.
  EXPECT_EQ(messageOf([] {
              host::planAnchors(anchoring({{"m", "Accl2___model.fc.bias"}}), true, kTrained,
                                kWeights, kOptimizerState);
            }),
            "anchorTensor: 'Accl2___model.fc.bias' is not a parameter or buffer of the model, "
            "or its optimizer's state. Did you mean 'Accl1___model.fc.bias'? getTensorNames() "
            "lists the names a compiled model can anchor.");
  // An inference model has no optimizer, whatever the caller passes.
  EXPECT_NE(messageOf([] {
              host::planAnchors(anchoring({{"m", "Accl1___model.fc.bias"}}), false, {}, kWeights,
                                kOptimizerState);
            }).find("is not a parameter or buffer of the model."),
            std::string::npos);
}

TEST(AnchorsTest, OptimizerStateIsItsValueAfterTheCall) {
  host::SessionOptions options = anchoring({{"m", "Accl1___model.fc.bias"}});
  options.deviceIterations = 2;
  options.outputMode = host::OutputMode::All;
  EXPECT_NE(messageOf([&] {
              host::planAnchors(options, true, kTrained, kWeights, kOptimizerState);
            }).find("returns a variable's value after the call, not after each of its 2 steps"),
            std::string::npos);
}

TEST(AnchorsTest, TensorNamesEndWithTheOptimizerState) {
  EXPECT_EQ(host::anchorableNames({"fc.weight"}, true, {"fc.weight"}, kOptimizerState),
            (std::vector<std::string>{"fc.weight", "UpdatedVar___fc.weight", "Gradient___fc.weight",
                                      "finalLossScale", "Accl1___model.fc.bias",
                                      "learningRate___specific___model.fc.bias"}));
  EXPECT_EQ(host::anchorableNames({"fc.weight"}, false, {}, kOptimizerState),
            (std::vector<std::string>{"fc.weight"}));
}

} // namespace
} // namespace popsim
