#pragma once

#include <limits>

namespace popsim::kernels::reference {

// log(exp(a) + exp(b) + exp(c)) around the largest of the three (as
// std::max(a, std::max(b, c)) picks it), around 0 when all are -inf: the
// step of ctc_loss's recursions as PyTorch's CPU kernel takes it. Written
// once for any arithmetic type M, as the elementwise formulas are
// (ir/pointwise_formulas.h): ir::ScalarMath in the reference kernel,
// SLEEF's vectors in kernels/vector.
template <class M> typename M::T logSumExp3(typename M::T a, typename M::T b, typename M::T c) {
  using T = typename M::T;
  const T largestOfBc = b < c ? c : b;
  const T largest = a < largestOfBc ? largestOfBc : a;
  const T m = largest == -std::numeric_limits<double>::infinity() ? M::constant(0.0) : largest;
  return M::log(M::exp(a - m) + M::exp(b - m) + M::exp(c - m)) + m;
}

} // namespace popsim::kernels::reference
