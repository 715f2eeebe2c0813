#pragma once

#include <algorithm>
#include <cstdint>

namespace popsim::kernels::reference {

// out[c][r] = in[r][c] for a rows x columns matrix, in square blocks that keep
// both sides' lines in cache (a row-by-row pass writes a line per element when
// the rows are long).
inline void transpose(const float* in, int64_t rows, int64_t columns, float* out) {
  constexpr int64_t kBlock = 16;
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock) {
    for (int64_t c0 = 0; c0 < columns; c0 += kBlock) {
      for (int64_t r = r0; r < std::min(rows, r0 + kBlock); ++r)
        for (int64_t c = c0; c < std::min(columns, c0 + kBlock); ++c)
          out[c * rows + r] = in[r * columns + c];
    }
  }
}

} // namespace popsim::kernels::reference
