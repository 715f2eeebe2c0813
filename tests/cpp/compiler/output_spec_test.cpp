// Output modes: which device iterations a call returns, where each one goes
// and the host shape, as PopTorch defines them.

#include "common/error.h"
#include "compiler/output_spec.h"
#include "test_utils.h"

#include <gtest/gtest.h>

namespace popsim {
namespace {

using compiler::OutputMode;
using compiler::OutputSpec;
using ir::Shape;

std::vector<int64_t> slots(const OutputSpec& spec, int64_t iterations, int64_t step = 1) {
  std::vector<int64_t> result;
  for (int64_t i = 0; i < iterations; ++i) {
    result.push_back(spec.slotOf(i, iterations, step));
  }
  return result;
}

TEST(OutputSpecTest, All) {
  const OutputSpec spec{OutputMode::All, 1};
  EXPECT_NO_THROW(spec.validate(4));
  EXPECT_EQ(spec.returnedIterations(4), 4);
  EXPECT_EQ(slots(spec, 4), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(spec.hostShape({2, 3}, 4), Shape({8, 3}));
  EXPECT_EQ(spec.hostShape({}, 4), Shape({4})); // scalars are stacked
  // A single returned iteration keeps the model's own shape, scalars too.
  EXPECT_EQ(spec.hostShape({2, 3}, 1), Shape({2, 3}));
  EXPECT_EQ(spec.hostShape({}, 1), Shape({}));
  EXPECT_STREQ(compiler::outputModeName(OutputMode::All), "All");
}

TEST(OutputSpecTest, Final) {
  const OutputSpec spec{OutputMode::Final, 1};
  EXPECT_NO_THROW(spec.validate(4));
  EXPECT_EQ(spec.returnedIterations(4), 1);
  EXPECT_EQ(slots(spec, 4), (std::vector<int64_t>{-1, -1, -1, 0}));
  EXPECT_EQ(spec.hostShape({2, 3}, 4), Shape({2, 3}));
  EXPECT_EQ(spec.hostShape({}, 4), Shape({}));
  EXPECT_EQ(slots(spec, 1), (std::vector<int64_t>{0}));
}

TEST(OutputSpecTest, EveryN) {
  // PopTorch's example: 10 iterations with period 5 return iterations 4 and 9.
  const OutputSpec five{OutputMode::EveryN, 5};
  EXPECT_NO_THROW(five.validate(10));
  EXPECT_EQ(five.returnedIterations(10), 2);
  EXPECT_EQ(slots(five, 10), (std::vector<int64_t>{-1, -1, -1, -1, 0, -1, -1, -1, -1, 1}));

  const OutputSpec two{OutputMode::EveryN, 2};
  EXPECT_EQ(two.returnedIterations(6), 3);
  EXPECT_EQ(slots(two, 6), (std::vector<int64_t>{-1, 0, -1, 1, -1, 2}));
  EXPECT_EQ(two.hostShape({2, 3}, 6), Shape({6, 3}));
  EXPECT_EQ(two.hostShape({}, 6), Shape({3}));

  // Period 1 is All; a period equal to the count is Final.
  const OutputSpec one{OutputMode::EveryN, 1};
  EXPECT_EQ(slots(one, 3), (std::vector<int64_t>{0, 1, 2}));
  const OutputSpec whole{OutputMode::EveryN, 3};
  EXPECT_EQ(slots(whole, 3), (std::vector<int64_t>{-1, -1, 0}));
  EXPECT_EQ(whole.hostShape({5}, 3), Shape({5}));
  EXPECT_EQ(whole.hostShape({}, 3), Shape({}));
}

TEST(OutputSpecTest, EveryNReturnsWholeStepsOfAccumulatedMicroBatches) {
  // As PopART's EveryN: every N-th step (global batch), each with all of its
  // micro-batches. 3 steps of 2 micro-batches with period 3: the last step's.
  const OutputSpec three{OutputMode::EveryN, 3};
  EXPECT_NO_THROW(three.validate(3));
  EXPECT_EQ(three.returnedIterations(6), 2);
  EXPECT_EQ(slots(three, 6, 2), (std::vector<int64_t>{-1, -1, -1, -1, 0, 1}));
  // 4 steps of 3 with period 2: steps 1 and 3.
  const OutputSpec two{OutputMode::EveryN, 2};
  EXPECT_EQ(two.returnedIterations(12), 6);
  EXPECT_EQ(slots(two, 12, 3), (std::vector<int64_t>{-1, -1, -1, 0, 1, 2, -1, -1, -1, 3, 4, 5}));
  EXPECT_EQ(two.hostShape({2}, 12), Shape({12}));
}

TEST(OutputSpecTest, Sum) {
  const OutputSpec spec{OutputMode::Sum, 1};
  EXPECT_NO_THROW(spec.validate(3));
  EXPECT_EQ(spec.returnedIterations(3), 1);
  EXPECT_EQ(slots(spec, 3), (std::vector<int64_t>{0, 0, 0})); // all accumulate into one
  EXPECT_EQ(spec.hostShape({2, 3}, 3), Shape({2, 3}));
  EXPECT_EQ(spec.hostShape({}, 3), Shape({}));
}

// popsim.Options names the option when a user sets these (test_errors.py);
// specs it never builds are popsim's own bugs.
TEST(OutputSpecTest, EveryNPeriodMustDivideTheIterationCount) {
  const OutputSpec spec{OutputMode::EveryN, 4};
  const CoreError error = testing::captureError([&] { spec.validate(6); });
  EXPECT_EQ(error.kind(), ErrorKind::Internal);
  EXPECT_TRUE(testing::contains(
      error.what(), "OutputMode.EveryN with output_return_period 4 and deviceIterations 6."));
  EXPECT_NO_THROW(spec.validate(8));
}

TEST(OutputSpecTest, EveryNPeriodMustBePositive) {
  for (int64_t period : {0, -2}) {
    const OutputSpec spec{OutputMode::EveryN, period};
    const CoreError error = testing::captureError([&] { spec.validate(4); });
    EXPECT_EQ(error.kind(), ErrorKind::Internal);
    EXPECT_TRUE(testing::contains(error.what(), "output_return_period " + std::to_string(period)));
  }
  // Other modes ignore the period.
  EXPECT_NO_THROW((OutputSpec{OutputMode::All, 0}.validate(4)));
}

TEST(OutputSpecTest, DeviceIterationsMustBePositive) {
  const CoreError error = testing::captureError([] { OutputSpec{}.validate(0); });
  EXPECT_EQ(error.kind(), ErrorKind::Internal);
  EXPECT_TRUE(testing::contains(error.what(), "deviceIterations 0."));
}

} // namespace
} // namespace popsim
