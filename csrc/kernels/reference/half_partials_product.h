#pragma once

#include <cstdint>
#include <functional>
#include <vector>

// The matrix product the float16-partials matmuls and convolutions reduce to.
namespace popsim::kernels::reference {

// A matrix as the product reads it: element (i, j) at
// data[i * rowStride + j * columnStride], so that a transposed operand is a
// view with its strides swapped, not a copy.
struct MatrixView {
  const float* data;
  int64_t rowStride;
  int64_t columnStride = 1;
};

// The same for the product's result.
struct OutputView {
  float* data;
  int64_t rowStride;
  int64_t columnStride = 1;
};

// C[m][p] = the sum over j, in order, of A[m][j] * B[j][p], summed as an IPU
// with float16 partials sums (HalfSum in partial_sums.h): each product in
// double (exact for float operands), each run of kHalfPartialRun products
// summed in double, rounded to float and then to float16 and added to a
// float16 total, which is rounded again. Every element of C sums its
// products in the same order and rounds at the same points as a HalfSum
// would, so the results are HalfSum's bit for bit.
//
// How: B is read by panels of columns (in place when its rows are
// contiguous, else packed), and each tile of C (rows of A by a panel) keeps
// its running sums in vector registers (AVX-512 or AVX2 with
// FMA: the product is exact, so a fused multiply-add rounds as the separate
// add does), the tiles spread over the OpenMP threads. Of the tile shapes
// the vector unit has (24 or 16 columns with AVX-512, 12 or 8 with AVX2) and
// of C and its transpose (C^T = B^T A^T, the same products in the same
// order), a rough cost model (padded lanes, strided packing) picks the
// cheapest, as for a C narrower than a panel.
void halfPartialsProduct(int64_t M, int64_t P, int64_t J, MatrixView A, MatrixView B, OutputView C);

// The same with the runs of partials given: C[m][p] sums J = the sum of
// runLengths products, the first runLengths[0] of them as one run, and so
// on (a run may be shorter than kHalfPartialRun: the products a kernel
// leaves out because they are zeros, such as a convolution's taps on the
// padding, still end their runs where they would).
void halfPartialsProduct(int64_t M, int64_t P, const std::vector<int64_t>& runLengths, MatrixView A,
                         MatrixView B, OutputView C);

// The same with B gathered a block of columns at a time (one or a few of
// the tiles' panels), just before the tiles read it: gatherPanel(p0, count,
// width, panel) writes columns p0 .. p0 + count of B's J rows as
// panel[j * width + q] (count <= width; the product sets the columns beyond
// to zeros). For a B that a kernel would otherwise gather
// whole, many times the size of its source (a convolution's taps), so that
// each panel is written and read while it is in cache. C = A B as given.
using PanelGather = std::function<void(int64_t p0, int64_t count, int64_t width, float* panel)>;
void halfPartialsProduct(int64_t M, int64_t P, const std::vector<int64_t>& runLengths, MatrixView A,
                         const PanelGather& gatherPanel, OutputView C);

// J products in runs of kHalfPartialRun, the last one shorter when J is not
// a multiple of it: the runs of the forms that take J.
std::vector<int64_t> evenPartialRuns(int64_t J);

// A is M x J with rows lda apart; B is J x P with rows ldb apart; C is M x P
// with rows ldc apart.
inline void halfPartialsProduct(int64_t M, int64_t P, int64_t J, const float* A, int64_t lda,
                                const float* B, int64_t ldb, float* C, int64_t ldc) {
  halfPartialsProduct(M, P, J, MatrixView{A, lda}, MatrixView{B, ldb}, OutputView{C, ldc});
}

} // namespace popsim::kernels::reference
