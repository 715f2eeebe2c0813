// The float16-partials matrix product against its definition, HalfSum per
// element, bit for bit: shapes that fill no tile evenly, runs of 16 that
// end mid-row, strided operands, and values of float16's whole range.
#include "kernels/reference/half_partials_product.h"

#include "common/float16.h"
#include "kernels/reference/partial_sums.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace popsim::kernels::reference {
namespace {

uint32_t bitsOf(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// float16 values with exponents across the range, zeros included.
std::vector<float> halves(size_t count, std::mt19937& random) {
  std::uniform_real_distribution<float> exponent(-14.0f, 6.0f);
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) {
    const float magnitude = i % 13 == 0 ? 0.0f : std::exp2(exponent(random));
    values[i] = popsim::roundToHalf(i % 3 == 0 ? -magnitude : magnitude);
  }
  return values;
}

TEST(HalfPartialsProductTest, EveryElementIsItsHalfSum) {
  std::mt19937 random(3);
  struct Shape {
    int64_t M, P, J;
  };
  // (With AVX-512, 12 x 10, 13 x 7 and 50 x 12 take the 16-column tile of 6
  // rows, the others the 24-column tile of 4 rows; with AVX2, 5 x 40 and
  // 6 x 17 the 8-column tile of 6 rows. A's rows are read in double, but
  // 7 x 20 x 10000's, too large for that, as floats. 40 x 70 over 12
  // products, C outweighing B, takes its tiles row tile by row tile.)
  for (const Shape& shape :
       {Shape{1, 1, 1}, Shape{3, 5, 17}, Shape{4, 24, 16}, Shape{9, 50, 33}, Shape{13, 7, 100},
        Shape{6, 31, 0}, Shape{64, 65, 300}, Shape{12, 10, 80}, Shape{50, 12, 300},
        Shape{5, 40, 50}, Shape{6, 17, 33}, Shape{7, 20, 10000}, Shape{40, 70, 12}}) {
    const int64_t lda = shape.J + 3, ldb = shape.P + 2, ldc = shape.P + 1;
    const std::vector<float> a = halves(static_cast<size_t>(shape.M * lda), random);
    const std::vector<float> b = halves(static_cast<size_t>(shape.J * ldb + 1), random);
    std::vector<float> c(static_cast<size_t>(shape.M * ldc), -1.0f);
    halfPartialsProduct(shape.M, shape.P, shape.J, a.data(), lda, b.data(), ldb, c.data(), ldc);
    for (int64_t m = 0; m < shape.M; ++m) {
      for (int64_t p = 0; p < shape.P; ++p) {
        HalfSum sum;
        for (int64_t j = 0; j < shape.J; ++j)
          sum.add(static_cast<double>(a[m * lda + j]) * b[j * ldb + p]);
        ASSERT_EQ(bitsOf(c[m * ldc + p]), bitsOf(sum.result()))
            << shape.M << "x" << shape.P << "x" << shape.J << " at " << m << ", " << p;
      }
      for (int64_t p = shape.P; p < ldc; ++p)
        ASSERT_EQ(c[m * ldc + p], -1.0f) << "written beyond the row";
    }
  }
}

// A wide B with contiguous rows far apart: its whole panels are read where
// they are (the tiles step through B's rows at its own stride), a last
// narrower panel is packed with zeros; a width that every tile divides
// leaves no packed panel at all. Either way each element is its HalfSum.
TEST(HalfPartialsProductTest, WholePanelsOfBReadInPlaceSumAsTheirDefinition) {
  std::mt19937 random(7);
  for (const int64_t P : {int64_t{96}, int64_t{100}, int64_t{241}}) {
    const int64_t M = 5, J = 70, ldb = 4099;
    const std::vector<float> a = halves(static_cast<size_t>(M * J), random);
    const std::vector<float> b = halves(static_cast<size_t>(J * ldb), random);
    std::vector<float> c(static_cast<size_t>(M * P), -1.0f);
    halfPartialsProduct(M, P, J, a.data(), J, b.data(), ldb, c.data(), P);
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t p = 0; p < P; ++p) {
        HalfSum sum;
        for (int64_t j = 0; j < J; ++j)
          sum.add(static_cast<double>(a[m * J + j]) * b[j * ldb + p]);
        ASSERT_EQ(bitsOf(c[m * P + p]), bitsOf(sum.result()))
            << "P " << P << " at " << m << ", " << p;
      }
    }
  }
}

// Operands and results read and written through strides (a transposed
// operand is a view with its strides swapped), and runs of partials given
// explicitly, shorter than kHalfPartialRun where a kernel leaves zero
// products out: each element is the HalfSum-like sum of its runs.
TEST(HalfPartialsProductTest, StridedViewsAndGivenRunsSumAsTheirDefinition) {
  std::mt19937 random(5);
  struct Case {
    int64_t M, P;
    std::vector<int64_t> runs;
  };
  // (9 x 26 over 8,000 products gathers A's rows as floats: in double they
  // would be more than the product converts.)
  for (const Case& c :
       {Case{5, 30, {16, 16, 7}}, Case{30, 3, {3, 16, 1, 9}}, Case{1, 1, {}}, Case{9, 26, {16}},
        Case{13, 50, {2, 5, 16, 16, 1}}, Case{9, 26, std::vector<int64_t>(500, 16)}}) {
    int64_t J = 0;
    for (int64_t length : c.runs)
      J += length;
    // A stored transposed (column-major), B row-major with padding, C transposed.
    const std::vector<float> a = halves(static_cast<size_t>(J * c.M + 1), random);
    const std::vector<float> b = halves(static_cast<size_t>(J * (c.P + 3) + 1), random);
    std::vector<float> out(static_cast<size_t>(c.P * c.M), -1.0f);
    halfPartialsProduct(c.M, c.P, c.runs, MatrixView{a.data(), 1, c.M},
                        MatrixView{b.data(), c.P + 3, 1}, OutputView{out.data(), 1, c.M});
    for (int64_t m = 0; m < c.M; ++m) {
      for (int64_t p = 0; p < c.P; ++p) {
        float total = 0.0f;
        int64_t j = 0;
        for (int64_t length : c.runs) {
          double run = 0.0;
          for (int64_t stop = j + length; j < stop; ++j)
            run += static_cast<double>(a[j * c.M + m]) * b[j * (c.P + 3) + p];
          total = popsim::roundToHalf(total + popsim::roundToHalf(static_cast<float>(run)));
        }
        ASSERT_EQ(bitsOf(out[p * c.M + m]), bitsOf(total))
            << c.M << "x" << c.P << "x" << J << " at " << m << ", " << p;
      }
    }
  }
}

// B given by a gather function a block of columns at a time (several of the
// tiles' panels side by side, the last block narrower): each element is the
// sum of its runs, and the function is asked for every column once, within
// the block width it is given.
TEST(HalfPartialsProductTest, BGatheredInBlocksSumsAsItsDefinition) {
  std::mt19937 random(11);
  for (const int64_t P : {int64_t{7}, int64_t{300}, int64_t{1001}}) {
    const int64_t M = 5;
    const std::vector<int64_t> runs = {16, 16, 16, 4, 16, 2};
    const int64_t J = 70;
    const std::vector<float> a = halves(static_cast<size_t>(M * J), random);
    const std::vector<float> b = halves(static_cast<size_t>(J * P), random);
    std::vector<float> c(static_cast<size_t>(M * P), -1.0f);
    std::vector<int> asked(static_cast<size_t>(P), 0);
    halfPartialsProduct(
        M, P, runs, MatrixView{a.data(), J},
        [&](int64_t p0, int64_t count, int64_t width, float* panel) {
          ASSERT_LE(count, width);
          for (int64_t q = 0; q < count; ++q) {
            ++asked[static_cast<size_t>(p0 + q)];
            for (int64_t j = 0; j < J; ++j)
              panel[j * width + q] = b[j * P + p0 + q];
          }
        },
        OutputView{c.data(), P});
    for (int64_t p = 0; p < P; ++p)
      ASSERT_EQ(asked[static_cast<size_t>(p)], 1) << "P " << P << ", column " << p;
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t p = 0; p < P; ++p) {
        float total = 0.0f;
        int64_t j = 0;
        for (int64_t length : runs) {
          double run = 0.0;
          for (int64_t stop = j + length; j < stop; ++j)
            run += static_cast<double>(a[m * J + j]) * b[j * P + p];
          total = popsim::roundToHalf(total + popsim::roundToHalf(static_cast<float>(run)));
        }
        ASSERT_EQ(bitsOf(c[m * P + p]), bitsOf(total)) << "P " << P << " at " << m << ", " << p;
      }
    }
  }
}

} // namespace
} // namespace popsim::kernels::reference
