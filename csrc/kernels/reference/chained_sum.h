#pragma once

#include <cstdint>

namespace popsim::kernels::reference {

// The sum of n values in Accumulator (double for floats: as accurate as a
// cascade sum at these lengths), in four independent chains so that the adds
// overlap rather than wait for one another. Exact for integers.
template <typename Accumulator, typename T> Accumulator chainedSum(const T* x, int64_t n) {
  Accumulator sum[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int64_t k = 0; k < 4; ++k)
      sum[k] += static_cast<Accumulator>(x[i + k]);
  }
  for (; i < n; ++i)
    sum[0] += static_cast<Accumulator>(x[i]);
  return (sum[0] + sum[1]) + (sum[2] + sum[3]);
}

} // namespace popsim::kernels::reference
