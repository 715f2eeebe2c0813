#pragma once

#include <cstdint>

// The matrix product the float16-partials convolutions reduce to.
namespace popsim::kernels::reference {

// C[m][p] = the sum over j, in order, of A[m][j] * B[j][p], summed as an IPU
// with float16 partials sums (HalfSum in partial_sums.h): each product in
// double (exact for float operands), each run of kHalfPartialRun products
// summed in double, rounded to float and then to float16 and added to a
// float16 total, which is rounded again. Every element of C sums its
// products in the same order and rounds at the same points as a HalfSum
// would, so the results are HalfSum's bit for bit; the work is blocked into
// tiles of rows and columns, vectorised along p (AVX-512 or AVX2 with FMA:
// the product is exact, so a fused multiply-add rounds as the separate add
// does) and spread over the OpenMP threads.
// A is M x J with rows lda apart; B is J x P with rows ldb apart; C is M x P
// with rows ldc apart.
void halfPartialsProduct(int64_t M, int64_t P, int64_t J, const float* A, int64_t lda,
                         const float* B, int64_t ldb, float* C, int64_t ldc);

} // namespace popsim::kernels::reference
