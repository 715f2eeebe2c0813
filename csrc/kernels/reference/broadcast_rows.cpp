#include "kernels/reference/broadcast_rows.h"

#include "kernels/reference/indexing.h"

#include <algorithm>

namespace popsim::kernels::reference {

BroadcastRows::BroadcastRows(const ir::Shape& out, const std::vector<ir::Shape>& operands) {
  if (!out.empty()) {
    outer_.assign(out.begin(), out.end() - 1);
    rowLength_ = out.back();
  }
  rows_ = ir::elementCount(outer_);
  piecesPerRow_ = std::max<int64_t>(1, (rowLength_ + kPieceLength - 1) / kPieceLength);
  if (rowLength_ == 0) rows_ = 0;
  for (const ir::Shape& shape : operands) {
    const std::vector<int64_t> strides = broadcastStrides(shape, out);
    steps_.push_back(strides.empty() ? 0 : strides.back());
    outerStrides_.emplace_back(strides.begin(),
                               strides.empty() ? strides.end() : strides.end() - 1);
  }
}

int64_t BroadcastRows::outputOffset(int64_t piece) const {
  return (piece / piecesPerRow_) * rowLength_ + (piece % piecesPerRow_) * kPieceLength;
}

int64_t BroadcastRows::length(int64_t piece) const {
  return std::min(kPieceLength, rowLength_ - (piece % piecesPerRow_) * kPieceLength);
}

int64_t BroadcastRows::operandOffset(int64_t piece, size_t k) const {
  int64_t row = piece / piecesPerRow_;
  int64_t offset = (piece % piecesPerRow_) * kPieceLength * steps_[k];
  const std::vector<int64_t>& strides = outerStrides_[k];
  for (size_t d = outer_.size(); d-- > 0;) {
    offset += (row % outer_[d]) * strides[d];
    row /= outer_[d];
  }
  return offset;
}

} // namespace popsim::kernels::reference
