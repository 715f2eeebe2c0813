// The vectorised elementwise loops (SLEEF on vectors of doubles, one
// translation unit per instruction set) against the reference tables (libm,
// one element at a time): every pointwise and binary function, value and
// derivative, on special values, every range the formulas branch on, the
// steps broadcasting gives, and a count that leaves a partial vector. Both
// compute in double and round to float, so they agree to the float bit but
// where a double result sits on a float rounding boundary: one float ulp is
// allowed, NaN and the infinities exactly.

#include "ir/binary_functions.h"
#include "ir/pointwise_functions.h"
#include "kernels/reference/ctc_loss.h"
#include "kernels/reference/pointwise.h"
#include "kernels/vector/elementwise_loops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace popsim {
namespace {

using kernels::VectorIsa;

std::vector<float> inputs() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {std::nanf(""), inf,   -inf, 0.0f,  -0.0f, 1e-40f, -1e-40f,
                          1.0f,          -1.0f, 3.0f, -3.0f, 20.0f, 1e30f,  -1e30f};
  std::mt19937 random(7);
  std::uniform_real_distribution<float> near(-4.0f, 4.0f), far(-100.0f, 100.0f), unit(-1.0f, 1.0f);
  for (int i = 0; i < 700; ++i) {
    x.push_back(near(random));
    x.push_back(far(random));
    x.push_back(unit(random));
  }
  x.push_back(0.25f); // 2115 values: a partial vector at the end for 4 and 8 lanes
  return x;
}

// Within one float ulp, NaN for NaN, and equal infinities.
::testing::AssertionResult agree(float actual, float expected) {
  if (std::isnan(expected) || std::isnan(actual)) {
    return std::isnan(expected) && std::isnan(actual) ? ::testing::AssertionSuccess()
                                                      : ::testing::AssertionFailure();
  }
  if (std::isinf(expected) || std::isinf(actual)) {
    return actual == expected ? ::testing::AssertionSuccess() : ::testing::AssertionFailure();
  }
  const float ulp = std::nextafter(std::fabs(expected), std::numeric_limits<float>::infinity()) -
                    std::fabs(expected);
  return std::fabs(actual - expected) <= ulp ? ::testing::AssertionSuccess()
                                             : ::testing::AssertionFailure();
}

bool cpuRuns(VectorIsa isa) {
  return isa == VectorIsa::Avx512 ? __builtin_cpu_supports("avx512f")
                                  : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

class ElementwiseLoopsKernelTest : public ::testing::TestWithParam<VectorIsa> {};

TEST_P(ElementwiseLoopsKernelTest, PointwiseFunctionsAgreeWithTheReferenceTable) {
  if (!cpuRuns(GetParam())) GTEST_SKIP() << "this CPU lacks the instruction set";
  const auto loops = kernels::vector::elementwiseLoops(GetParam());
  ASSERT_TRUE(loops.has_value());
  const std::vector<float> x = inputs();
  std::vector<float> dy(x.size());
  std::mt19937 random(3);
  std::normal_distribution<float> normal;
  for (float& g : dy)
    g = normal(random);
  const auto n = static_cast<int64_t>(x.size());
  for (const ir::PointwiseFunction& function : ir::pointwiseFunctions()) {
    for (const std::vector<double>& params :
         {std::vector<double>{0.5, 1.5, 2.0}, std::vector<double>{3.0, 20.0, 1.0}}) {
      std::vector<float> actual(x.size()), expected(x.size());
      loops->pointwiseValues(function.index, params.data(), x.data(), actual.data(), n);
      kernels::reference::pointwiseValues(function, params.data(), x.data(), expected.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(agree(actual[i], expected[i]))
            << function.name << "(" << x[i] << ") with params " << params[0] << ": " << actual[i]
            << " against " << expected[i];
      }
      if (function.derivative == nullptr) continue;
      loops->pointwiseGradients(function.index, params.data(), dy.data(), x.data(), actual.data(),
                                n);
      kernels::reference::pointwiseGradients(function, params.data(), dy.data(), x.data(),
                                             expected.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(agree(actual[i], expected[i]))
            << function.name << "'(" << x[i] << ") with params " << params[0] << ": " << actual[i]
            << " against " << expected[i];
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, ElementwiseLoopsKernelTest,
                         ::testing::Values(VectorIsa::Avx2, VectorIsa::Avx512),
                         [](const auto& testInfo) {
                           return kernels::vectorIsaName(testInfo.param);
                         });

// The binary function's value or derivative by the table, one element at a
// time (the reference kernel's arithmetic, with its masking of zero
// derivatives).
float expectedBinary(const ir::BinaryFunction& function, int operand, float dy, float a, float b) {
  if (operand < 0) return static_cast<float>(function.value(a, b));
  const double d = (operand == 0 ? function.derivativeA : function.derivativeB)(a, b);
  return d == 0.0 ? 0.0f : static_cast<float>(static_cast<double>(dy) * d);
}

TEST_P(ElementwiseLoopsKernelTest, BinaryFunctionsAgreeWithTheReferenceTable) {
  if (!cpuRuns(GetParam())) GTEST_SKIP() << "this CPU lacks the instruction set";
  const auto loops = kernels::vector::elementwiseLoops(GetParam());
  ASSERT_TRUE(loops.has_value());
  // Every value of inputs() against every value of a shifted copy, and
  // against one broadcast value (step 0) and a strided operand (step 3).
  const std::vector<float> a = inputs();
  std::vector<float> b(a.rbegin(), a.rend());
  std::vector<float> strided(3 * b.size());
  for (size_t i = 0; i < b.size(); ++i)
    strided[3 * i] = b[i];
  std::vector<float> dy(a.size());
  std::mt19937 random(5);
  std::normal_distribution<float> normal;
  for (float& g : dy)
    g = normal(random);
  const auto n = static_cast<int64_t>(a.size());
  int checked = 0;
  for (const ir::BinaryFunction& function : ir::binaryFunctions()) {
    if (function.formula == ir::kNoFormula || function.result == ir::BinaryResult::Bool) continue;
    ++checked;
    const float scalar = -1.75f;
    using Operand = std::pair<const float*, int64_t>;
    for (auto [bs, sb] : {Operand{b.data(), 1}, Operand{&scalar, 0}, Operand{strided.data(), 3}}) {
      for (int operand = -1; operand < 2; ++operand) {
        if (operand >= 0 && (operand == 0 ? function.derivativeA : function.derivativeB) == nullptr)
          continue;
        std::vector<float> actual(a.size());
        if (operand < 0) {
          loops->binaryValues(function.formula, a.data(), 1, bs, sb, actual.data(), n);
        } else {
          loops->binaryGradients(function.formula, operand, dy.data(), 1, a.data(), 1, bs, sb,
                                 actual.data(), n);
        }
        for (int64_t i = 0; i < n; ++i) {
          const float expected = expectedBinary(function, operand, dy[i], a[i], bs[i * sb]);
          ASSERT_TRUE(agree(actual[i], expected))
              << function.name << " (operand " << operand << ") at (" << a[i] << ", " << bs[i * sb]
              << "), step " << sb << ": " << actual[i] << " against " << expected;
        }
      }
    }
  }
  EXPECT_GE(checked, 10);
}

// log_softmax's row loops against libm one element at a time: the sum of
// exps to double rounding (its lanes add in another order) for every row
// length up to a few vectors, and the gradient to one float ulp, with NaN
// and infinities where the rows have them.
TEST_P(ElementwiseLoopsKernelTest, LogSoftmaxRowsAgreeWithLibm) {
  if (!cpuRuns(GetParam())) GTEST_SKIP() << "this CPU lacks the instruction set";
  const auto loops = kernels::vector::elementwiseLoops(GetParam());
  ASSERT_TRUE(loops.has_value());
  const std::vector<float> x = inputs();
  for (int64_t count = 1; count <= 19; ++count) {
    for (int64_t first = 14; first + count <= 200; first += 37) { // finite values
      const double shift = x[first];
      double expected = 0.0;
      for (int64_t k = 0; k < count; ++k)
        expected += std::exp(x[first + k] - shift);
      const double actual = loops->sumOfExp(x.data() + first, shift, count);
      EXPECT_NEAR(actual, expected, 1e-14 * expected) << count << " values from " << first;
    }
  }
  EXPECT_TRUE(std::isnan(loops->sumOfExp(x.data(), 0.0, 11)));    // a NaN in the row
  EXPECT_TRUE(std::isinf(loops->sumOfExp(x.data() + 1, 0.0, 9))); // +inf in the row
  EXPECT_EQ(loops->sumOfExp(x.data() + 2, 0.0, 1), 0.0);          // exp(-inf)

  std::vector<float> dy(x.size()), dx(x.size());
  std::mt19937 random(5);
  std::normal_distribution<float> normal;
  for (float& g : dy)
    g = normal(random);
  const auto n = static_cast<int64_t>(x.size());
  for (const double sum : {0.0, -0.75, 3.5}) {
    loops->logSoftmaxGradients(dy.data(), x.data(), sum, dx.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const auto expected = static_cast<float>(dy[i] - std::exp(static_cast<double>(x[i])) * sum);
      ASSERT_TRUE(agree(dx[i], expected))
          << "y = " << x[i] << ", dy = " << dy[i] << ", sum = " << sum << ": " << dx[i]
          << " against " << expected;
    }
  }
}

// ctc_loss's loops against the reference's (libm, one element at a time):
// log-sum-exp steps to double rounding, -inf operands (impossible paths)
// included, and the gradient to one float ulp.
TEST_P(ElementwiseLoopsKernelTest, CtcLossMathsAgreeWithLibm) {
  if (!cpuRuns(GetParam())) GTEST_SKIP() << "this CPU lacks the instruction set";
  const auto loops = kernels::vector::elementwiseLoops(GetParam());
  ASSERT_TRUE(loops.has_value());
  const kernels::reference::CtcMaths scalar = kernels::reference::scalarCtcMaths();
  const double negInf = -std::numeric_limits<double>::infinity();
  std::mt19937 random(11);
  std::uniform_real_distribution<double> logProb(-30.0, 0.0);
  std::bernoulli_distribution impossible(0.3);
  constexpr int64_t kCount = 203; // a partial vector at the end
  std::vector<double> operands[4];
  for (std::vector<double>& values : operands) {
    for (int64_t s = 0; s < kCount; ++s)
      values.push_back(impossible(random) ? negInf : logProb(random));
  }
  operands[0][5] = operands[1][5] = operands[2][5] = negInf; // all three impossible
  std::vector<double> actual(kCount), expected(kCount);
  for (const int64_t count : {int64_t{1}, int64_t{7}, kCount}) {
    loops->ctcLogSumExpRows(operands[0].data(), operands[1].data(), operands[2].data(),
                            operands[3].data(), actual.data(), count);
    scalar.logSumExpRows(operands[0].data(), operands[1].data(), operands[2].data(),
                         operands[3].data(), expected.data(), count);
    for (int64_t s = 0; s < count; ++s) {
      if (std::isinf(expected[s])) {
        EXPECT_EQ(actual[s], expected[s]) << s;
      } else {
        EXPECT_NEAR(actual[s], expected[s], 1e-14 * std::fabs(expected[s]) + 1e-300) << s;
      }
    }
  }
  const std::vector<float> lp = inputs();
  std::vector<double> posterior(lp.size());
  for (size_t k = 0; k < lp.size(); ++k)
    posterior[k] = impossible(random) ? negInf : logProb(random);
  const auto n = static_cast<int64_t>(lp.size());
  std::vector<float> dlp(lp.size()), expectedDlp(lp.size());
  loops->ctcGradients(lp.data(), posterior.data(), 2.5, -0.75, dlp.data(), n);
  scalar.gradients(lp.data(), posterior.data(), 2.5, -0.75, expectedDlp.data(), n);
  for (int64_t k = 0; k < n; ++k) {
    ASSERT_TRUE(agree(dlp[k], expectedDlp[k]))
        << "lp = " << lp[k] << ", posterior = " << posterior[k] << ": " << dlp[k] << " against "
        << expectedDlp[k];
  }
}

TEST(ElementwiseLoopsKernelTest, NoLoopsWithoutAvx2) {
  EXPECT_FALSE(kernels::vector::elementwiseLoops(VectorIsa::Baseline).has_value());
}

} // namespace
} // namespace popsim
