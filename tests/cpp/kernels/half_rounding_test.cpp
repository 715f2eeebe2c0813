// float16 conversions: the scalar ones (common/float16.h) against an oracle
// built from the list of every finite float16 value, and the vectorised
// buffers (kernels/half_rounding.h, F16C where the CPU has it) against the
// scalar ones, bit for bit.

#include "common/float16.h"
#include "kernels/half_rounding.h"
#include "kernels/reference/random_bits.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace popsim {
namespace {

uint32_t bitsOf(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// Every finite float16 value, from its definition: (-1)^s 2^(e-15) (1 + m/1024),
// or 2^-14 (m/1024) for exponent 0.
std::vector<float> finiteHalves() {
  std::vector<float> values;
  for (int sign = 0; sign < 2; ++sign) {
    for (int exponent = 0; exponent < 31; ++exponent) {
      for (int mantissa = 0; mantissa < 1024; ++mantissa) {
        const double magnitude = exponent == 0 ? std::ldexp(mantissa / 1024.0, -14)
                                               : std::ldexp(1.0 + mantissa / 1024.0, exponent - 15);
        values.push_back(static_cast<float>(sign ? -magnitude : magnitude));
      }
    }
  }
  return values;
}

// The nearest float16 value, ties to the one with an even mantissa; beyond
// the largest finite value by half an ulp or more, an infinity.
float oracle(float x, const std::vector<float>& sortedPositive) {
  const float magnitude = std::fabs(x);
  const float sign = std::signbit(x) ? -1.0f : 1.0f;
  if (magnitude >= 65520.0f) return sign * std::numeric_limits<float>::infinity();
  const auto above = std::lower_bound(sortedPositive.begin(), sortedPositive.end(), magnitude);
  if (above == sortedPositive.end()) return sign * sortedPositive.back(); // below 65520
  if (*above == magnitude) return sign * magnitude;
  const float high = *above;
  const float low = *(above - 1);
  const double toLow = static_cast<double>(magnitude) - low;
  const double toHigh = static_cast<double>(high) - magnitude;
  if (toLow != toHigh) return sign * (toLow < toHigh ? low : high);
  const bool lowEven = ((above - 1 - sortedPositive.begin()) % 2) == 0; // mantissa parity
  return sign * (lowEven ? low : high);
}

std::vector<float> sortedPositiveHalves() {
  std::vector<float> positive;
  for (float value : finiteHalves()) {
    if (!std::signbit(value)) positive.push_back(value);
  }
  std::sort(positive.begin(), positive.end());
  return positive;
}

TEST(HalfRoundingTest, EveryFloat16ValueConvertsBothWaysExactly) {
  for (float value : finiteHalves()) {
    const uint16_t bits = floatToHalfBits(value);
    EXPECT_EQ(bitsOf(halfBitsToFloat(bits)), bitsOf(value)) << value;
  }
  EXPECT_TRUE(std::isinf(halfBitsToFloat(0x7c00)) && halfBitsToFloat(0x7c00) > 0);
  EXPECT_TRUE(std::isinf(halfBitsToFloat(0xfc00)) && halfBitsToFloat(0xfc00) < 0);
  EXPECT_TRUE(std::isnan(halfBitsToFloat(0x7e00)));
}

TEST(HalfRoundingTest, RoundsToNearestWithTiesToEven) {
  const std::vector<float> positive = sortedPositiveHalves();
  std::mt19937 random(11);
  std::vector<float> xs = {1.0f + 1.0f / 2048, // a tie: stays at 1 (even)
                           1.0f + 3.0f / 2048, // a tie: goes up to 1 + 2/1024 (even)
                           65504.0f,
                           65519.0f, // the largest finite value, and below the tie
                           65520.0f,
                           1e6f,                  // overflow to infinity
                           std::ldexp(1.0f, -25), // half the smallest subnormal: a tie, to 0
                           std::ldexp(3.0f, -26), // above that tie: the smallest subnormal
                           std::ldexp(1.0f, -14) *
                               0.99951171875f, // rounds up to the smallest normal
                           0.0f,
                           -0.0f,
                           1e-30f,
                           -1e-30f};
  std::uniform_real_distribution<float> exponent(-26.0f, 17.0f);
  for (int i = 0; i < 200000; ++i) {
    const float x = std::exp2(exponent(random)) * (i % 2 ? -1.0f : 1.0f);
    xs.push_back(x);
  }
  for (float x : xs) {
    EXPECT_EQ(bitsOf(roundToHalf(x)), bitsOf(oracle(x, positive))) << x;
  }
  EXPECT_EQ(roundToHalf(1.0f + 1.0f / 2048), 1.0f);
  EXPECT_TRUE(std::isinf(roundToHalf(65520.0f)));
  EXPECT_EQ(roundToHalf(65519.0f), 65504.0f);
  EXPECT_TRUE(std::signbit(roundToHalf(-1e-30f)) && roundToHalf(-1e-30f) == 0.0f);
  EXPECT_TRUE(std::isnan(roundToHalf(std::nanf(""))));
}

TEST(HalfRoundingTest, BuffersRoundAsTheScalarConversionDoes) {
  std::mt19937 random(5);
  std::uniform_real_distribution<float> exponent(-28.0f, 18.0f);
  std::vector<float> values = {std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(),
                               0.0f,
                               -0.0f,
                               65520.0f,
                               1.0f + 1.0f / 2048};
  for (int i = 0; i < 100003; ++i) { // not a multiple of the vector width
    values.push_back(std::exp2(exponent(random)) * (i % 3 ? 1.0f : -1.0f));
  }
  std::vector<float> rounded = values;
  kernels::roundToHalf(rounded.data(), rounded.size());
  std::vector<uint16_t> halves(values.size());
  kernels::floatToHalf(values.data(), halves.data(), values.size());
  std::vector<float> back(values.size());
  kernels::halfToFloat(halves.data(), back.data(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(bitsOf(rounded[i]), bitsOf(roundToHalf(values[i]))) << values[i];
    ASSERT_EQ(halves[i], floatToHalfBits(values[i])) << values[i];
    ASSERT_EQ(bitsOf(back[i]), bitsOf(rounded[i])) << values[i];
  }
}

// SplitMix64's finaliser, as the kernel draws: element i of a buffer uses
// mix(stream + i), stream = mix(key ^ mix(draw + golden ratio)).
uint64_t splitMix(uint64_t x) { return kernels::reference::mix64(x); }

// The rule stochastic rounding follows: between the float16 neighbours
// low <= |x| < high, high with probability (|x| - low) / (high - low),
// compared with a 53-bit uniform number; exact values, NaN, infinities and
// magnitudes beyond 65504 round to nearest.
float stochasticOracle(float x, uint64_t random, const std::vector<float>& positive) {
  const float magnitude = std::fabs(x);
  if (!(magnitude <= 65504.0f)) return roundToHalf(x);
  const auto above = std::upper_bound(positive.begin(), positive.end(), magnitude);
  const float low = *(above - 1);
  if (low == magnitude) return x;
  const float high = *above;
  const double up = (static_cast<double>(magnitude) - low) / (static_cast<double>(high) - low);
  const double uniform = static_cast<double>(random >> 11) * 0x1.0p-53;
  const float chosen = uniform < up ? high : low;
  return std::signbit(x) ? -chosen : chosen;
}

TEST(HalfRoundingTest, StochasticRoundingFollowsItsRuleBitForBit) {
  const std::vector<float> positive = sortedPositiveHalves();
  std::mt19937 random(11);
  std::uniform_real_distribution<float> exponent(-60.0f, 17.0f);
  std::vector<float> values = {0.0f,
                               -0.0f,
                               65504.0f,
                               65505.0f,
                               -70000.0f,
                               1.0f,
                               6.1035156e-05f,
                               6.1035e-05f,
                               2047.9f,
                               std::numeric_limits<float>::infinity(),
                               std::nanf(""),
                               0x1.8p-54f,
                               0x1.fffffep-55f,
                               0x1.fffffep-15f,
                               std::numeric_limits<float>::denorm_min()};
  // Both sides of 2^-14 and of 2^-54: float16's normal and subnormal ranges,
  // and values too small for the integer rule.
  for (int i = 0; i < 400003; ++i) {
    values.push_back(std::exp2(exponent(random)) * (i % 3 ? 1.0f : -1.0f));
  }
  const uint64_t key = 0x1234, draw = 7;
  std::vector<float> rounded = values;
  kernels::roundToHalfStochastically(rounded.data(), rounded.size(), key, draw);
  const uint64_t stream = splitMix(key ^ splitMix(draw + 0x9e3779b97f4a7c15ull));
  for (size_t i = 0; i < values.size(); ++i) {
    const float expected = stochasticOracle(values[i], splitMix(stream + i), positive);
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(rounded[i]));
      continue;
    }
    ASSERT_EQ(bitsOf(rounded[i]), bitsOf(expected)) << values[i] << " at " << i;
  }
}

// Every float16 value, infinities included, is its own rounding either way:
// the float16-partials kernels, whose results are float16 values already,
// skip the rounding pass (kernel_factory.cpp) without changing a bit.
TEST(HalfRoundingTest, Float16ValuesRoundToThemselvesEitherWay) {
  std::vector<float> values = finiteHalves();
  values.push_back(std::numeric_limits<float>::infinity());
  values.push_back(-std::numeric_limits<float>::infinity());
  for (const uint64_t draw : {0, 1, 2}) {
    std::vector<float> stochastic = values;
    kernels::roundToHalfStochastically(stochastic.data(), stochastic.size(), 0x51, draw);
    std::vector<float> nearest = values;
    kernels::roundToHalf(nearest.data(), nearest.size());
    for (size_t i = 0; i < values.size(); ++i) {
      ASSERT_EQ(bitsOf(stochastic[i]), bitsOf(values[i])) << values[i];
      ASSERT_EQ(bitsOf(nearest[i]), bitsOf(values[i])) << values[i];
    }
  }
}

} // namespace
} // namespace popsim
