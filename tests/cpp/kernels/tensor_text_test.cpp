// The text print_tensor shows: nesting, alignment, summarising, formats.
#include "kernels/reference/tensor_text.h"

#include <gtest/gtest.h>

#include <cmath>

namespace popsim::kernels::reference {
namespace {

TEST(TensorTextTest, RowsAlignedAndNested) {
  const TensorTextFormat format;
  EXPECT_EQ(tensorText({1.0, -2.5, 3.25, 40.0}, {2, 2}, false, format),
            "(( 1.0000, -2.5000),\n ( 3.2500, 40.0000))");
  EXPECT_EQ(tensorText({7.0}, {}, false, format), "7.0000");
  EXPECT_EQ(tensorText({3.0, -12.0}, {2}, true, format), "(  3, -12)");
}

TEST(TensorTextTest, LargeTensorsShowTheirEdges) {
  TensorTextFormat format;
  format.summariseThreshold = 5;
  format.edgeItems = 2;
  EXPECT_EQ(tensorText({0, 1, 2, 3, 4, 5, 6}, {7}, true, format), "(0, 1, ..., 5, 6)");
}

TEST(TensorTextTest, FormatsBracketsAndSeparators) {
  TensorTextFormat format;
  format.floatFormat = "scientific";
  format.digits = 2;
  format.separator = " ";
  format.openBracket = "[";
  format.closeBracket = "]";
  EXPECT_EQ(tensorText({1500.0, -0.25}, {2}, false, format), "[ 1.50e+03 -2.50e-01]");
  format.floatFormat = "auto";
  EXPECT_EQ(tensorText({1e-9, 1.0}, {2}, false, format), "[1.00e-09 1.00e+00]");
  format.digits = 0;
  EXPECT_EQ(tensorText({0.5, 12.0}, {2}, false, format), "[0.5 12]");
}

TEST(TensorTextTest, LongRowsBreakAtTheLineWidth) {
  TensorTextFormat format;
  format.maxLineWidth = 20;
  EXPECT_EQ(tensorText({1, 2, 3, 4, 5, 6}, {6}, false, format),
            "(1.0000, 2.0000,\n 3.0000, 4.0000,\n 5.0000, 6.0000)");
}

TEST(TensorTextTest, NonFiniteValuesByName) {
  const TensorTextFormat format;
  EXPECT_EQ(tensorText({NAN, INFINITY, -INFINITY}, {3}, false, format), "( nan,  inf, -inf)");
}

} // namespace
} // namespace popsim::kernels::reference
