#pragma once

#include <cstdint>

namespace popsim::ir {

// Output length of a pooling window sweep, with PyTorch's rules: floor by
// default, ceil with ceil_mode, but the last window must start inside the
// input or the left padding. Kernels use it to derive the right padding.
inline int64_t pooledSize(int64_t input, int64_t kernel, int64_t stride, int64_t padding,
                          int64_t dilation, bool ceilMode) {
  const int64_t span = dilation * (kernel - 1) + 1;
  const int64_t numerator = input + 2 * padding - span + (ceilMode ? stride - 1 : 0);
  if (numerator < 0) {
    return 0;
  }
  int64_t size = numerator / stride + 1;
  if (ceilMode && (size - 1) * stride >= input + padding) {
    --size;
  }
  return size;
}

// The first and one-past-last input index of adaptive pooling bin `index`.
inline int64_t adaptiveBinStart(int64_t index, int64_t outputSize, int64_t inputSize) {
  return (index * inputSize) / outputSize;
}
inline int64_t adaptiveBinEnd(int64_t index, int64_t outputSize, int64_t inputSize) {
  return ((index + 1) * inputSize + outputSize - 1) / outputSize;
}

} // namespace popsim::ir
