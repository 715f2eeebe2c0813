// The text print_tensor shows: nesting, alignment, summarising, formats.
#include "kernels/reference/tensor_text.h"

#include <gtest/gtest.h>

#include <cmath>

namespace popsim::kernels::reference {
namespace {

TEST(TensorTextTest, RowsAlignedAndNested) {
  const TensorTextFormat format;
  // 4 significant digits of the largest value (40.00) set the decimals.
  EXPECT_EQ(tensorText({1.0, -2.5, 3.25, 40.0}, {2, 2}, false, format),
            "(\n ( 1.00, -2.50)\n ( 3.25, 40.00)\n)");
  EXPECT_EQ(tensorText({1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0}, {2, 2, 2}, false, format),
            "(\n (\n  (1.000, 2.000)\n  (3.000, 4.000)\n )\n (\n  (5.000, 6.000)\n"
            "  (7.000, 8.000)\n )\n)");
  EXPECT_EQ(tensorText({7.0}, {}, false, format), "7.000");
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
  EXPECT_EQ(tensorText({1500.0, -0.25}, {2}, false, format), "[ 1.5e+03 -2.5e-01]");
  format.floatFormat = "auto";
  EXPECT_EQ(tensorText({1e-9, 1.0}, {2}, false, format), "[1.0e-09 1.0e+00]");
  format.digits = 0;
  EXPECT_EQ(tensorText({0.5, 12.0}, {2}, false, format), "[0.5 12]");
}

TEST(TensorTextTest, LongRowsBreakAtTheLineWidth) {
  TensorTextFormat format;
  format.maxLineWidth = 20;
  EXPECT_EQ(tensorText({1, 2, 3, 4, 5, 6}, {6}, false, format),
            "(1.000, 2.000, 3.000,\n  4.000, 5.000,\n  6.000)");
}

// Poplar's layouts of one 2x2 tensor with 8 digits, as PopTorch users see them.
TEST(TensorTextTest, PoplarLayouts) {
  const std::vector<double> values = {1.4962566, 1.7682219, 1.0884774, 1.1320305};
  TensorTextFormat format;
  format.digits = 8;
  format.separator = " ";
  format.openBracket = "{";
  format.closeBracket = "}";
  EXPECT_EQ(tensorText(values, {2, 2}, false, format),
            "{\n {1.4962566 1.7682219}\n {1.0884774 1.1320305}\n}");
  format.floatFormat = "scientific";
  format.separator = ",";
  format.openBracket = "[";
  format.closeBracket = "]";
  format.maxLineWidth = 15;
  EXPECT_EQ(tensorText(values, {2, 2}, false, format),
            "[\n [1.4962566e+00,\n   1.7682219e+00]\n [1.0884774e+00,\n   1.1320305e+00]\n]");
  format.floatFormat = "fixed";
  format.separator = ";";
  format.openBracket = "(";
  format.closeBracket = ")";
  format.maxLineWidth = 80;
  EXPECT_EQ(tensorText(values, {2, 2}, false, format),
            "(\n (1.4962566;1.7682219)\n (1.0884774;1.1320305)\n)");
}

TEST(TensorTextTest, NonFiniteValuesByName) {
  const TensorTextFormat format;
  EXPECT_EQ(tensorText({NAN, INFINITY, -INFINITY}, {3}, false, format), "( nan,  inf, -inf)");
}

} // namespace
} // namespace popsim::kernels::reference
