#pragma once

#include "ir/shape.h"

#include <cstdint>
#include <vector>

namespace popsim::kernels::reference {

// Strides of `shape` as seen from a broadcast `outShape`: the shape is
// right-aligned and broadcast dimensions get stride 0.
inline std::vector<int64_t> broadcastStrides(const ir::Shape& shape, const ir::Shape& outShape) {
  std::vector<int64_t> strides(outShape.size(), 0);
  const std::vector<int64_t> own = ir::contiguousStrides(shape);
  const size_t offset = outShape.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    strides[offset + i] = shape[i] == 1 ? 0 : own[i];
  }
  return strides;
}

// Calls fn(index) for every multi-index of `shape` in row-major order.
template <typename Fn> void forEachIndex(const ir::Shape& shape, Fn fn) {
  const int64_t total = ir::elementCount(shape);
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t linear = 0; linear < total; ++linear) {
    fn(index);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) {
        break;
      }
      index[d] = 0;
    }
  }
}

inline int64_t dot(const std::vector<int64_t>& index, const std::vector<int64_t>& strides) {
  int64_t offset = 0;
  for (size_t i = 0; i < index.size(); ++i) {
    offset += index[i] * strides[i];
  }
  return offset;
}

// Sizes around dimension `dim`: outer x dim x inner, as softmax and
// reductions along one axis see a tensor.
struct AxisSplit {
  int64_t outer = 1;
  int64_t size = 1;
  int64_t inner = 1;
};

inline AxisSplit splitAroundAxis(const ir::Shape& shape, int64_t dim) {
  AxisSplit split;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < dim)
      split.outer *= shape[d];
    else if (d == dim)
      split.size = shape[d];
    else
      split.inner *= shape[d];
  }
  return split;
}

} // namespace popsim::kernels::reference
