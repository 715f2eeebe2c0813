// float16 conversions: the scalar ones (common/float16.h) against an oracle
// built from the list of every finite float16 value, and the vectorised
// buffers (kernels/half_rounding.h, F16C where the CPU has it) against the
// scalar ones, bit for bit.

#include "common/float16.h"
#include "kernels/half_rounding.h"

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

} // namespace
} // namespace popsim
