// The fast float loops of the binary functions compute what the table's
// values give, to the bit (NaN for NaN, the sign of zero), on every pair of
// special and ordinary values and with every stride broadcasting gives.

#include "ir/binary_functions.h"
#include "kernels/reference/fast_binary_functions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>
#include <vector>

namespace popsim {
namespace {

const std::vector<float> kValues = {std::numeric_limits<float>::quiet_NaN(),
                                    std::numeric_limits<float>::infinity(),
                                    -std::numeric_limits<float>::infinity(),
                                    0.0f,
                                    -0.0f,
                                    1.5f,
                                    -2.25f,
                                    1.5f,
                                    3e-39f,
                                    -7.0f};

bool sameBits(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof(float)) == 0;
}

TEST(FastBinaryFunctionsTest, AgreeWithTheTableOnEveryPairAndStride) {
  int checked = 0;
  for (const ir::BinaryFunction& function : ir::binaryFunctions()) {
    const kernels::reference::FastBinaryPiece fast =
        kernels::reference::findFastBinaryPiece(function.name);
    if (fast == nullptr) continue;
    ++checked;
    const bool toBool = function.result == ir::BinaryResult::Bool;
    for (float a : kValues) {
      std::vector<float> bs = kValues;
      std::vector<float> as(bs.size(), a);
      const auto n = static_cast<int64_t>(bs.size());
      // Strides (1, 1), (0, 1) and (2, 1) over the same pairs.
      std::vector<float> wide(2 * bs.size(), a);
      for (auto [pa, sa, pb, sb] :
           {std::tuple{as.data(), 1, bs.data(), 1}, std::tuple{&a, 0, bs.data(), 1},
            std::tuple{wide.data(), 2, bs.data(), 1}}) {
        std::vector<float> floats(bs.size());
        std::vector<char> bools(bs.size());
        fast(pa, sa, pb, sb, toBool ? static_cast<void*>(bools.data()) : floats.data(), n);
        for (size_t j = 0; j < bs.size(); ++j) {
          const double expected = function.value(a, bs[j]);
          if (toBool) {
            EXPECT_EQ(bools[j] != 0, expected != 0.0)
                << function.name << "(" << a << ", " << bs[j] << ")";
          } else {
            EXPECT_TRUE(sameBits(floats[j], static_cast<float>(expected)))
                << function.name << "(" << a << ", " << bs[j] << ") = " << floats[j] << ", table "
                << expected;
          }
        }
      }
      // A broadcast second operand.
      for (float b : kValues) {
        std::vector<float> floats(as.size());
        std::vector<char> bools(as.size());
        fast(as.data(), 1, &b, 0, toBool ? static_cast<void*>(bools.data()) : floats.data(), n);
        const double expected = function.value(a, b);
        if (toBool) {
          EXPECT_EQ(bools[0] != 0, expected != 0.0) << function.name;
        } else {
          EXPECT_TRUE(sameBits(floats[0], static_cast<float>(expected))) << function.name;
        }
      }
    }
  }
  EXPECT_GE(checked, 15);
}

} // namespace
} // namespace popsim
