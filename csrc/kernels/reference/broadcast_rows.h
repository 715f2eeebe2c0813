#pragma once

#include "ir/shape.h"

#include <cstdint>
#include <vector>

namespace popsim::kernels::reference {

// The elements of a broadcast output as pieces of its rows (its last
// dimension, cut into pieces of at most kPieceLength so that one long row
// spreads over threads too), with where each operand's elements of a piece
// start and how far apart they are (0 along broadcast dimensions).
class BroadcastRows {
public:
  static constexpr int64_t kPieceLength = 4096;

  BroadcastRows(const ir::Shape& out, const std::vector<ir::Shape>& operands);

  int64_t pieces() const { return rows_ * piecesPerRow_; }
  // The piece's first output element and its length.
  int64_t outputOffset(int64_t piece) const;
  int64_t length(int64_t piece) const;
  // Operand k's first element in the piece, and its step along the row.
  int64_t operandOffset(int64_t piece, size_t k) const;
  int64_t operandStep(size_t k) const { return steps_[k]; }

private:
  ir::Shape outer_; // the output's dimensions before the last
  int64_t rowLength_ = 1;
  int64_t rows_ = 1;
  int64_t piecesPerRow_ = 1;
  std::vector<std::vector<int64_t>> outerStrides_; // per operand, along outer_
  std::vector<int64_t> steps_;                     // per operand, along the row
};

} // namespace popsim::kernels::reference
