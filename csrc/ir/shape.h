#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace popsim::ir {

// Dimensions of a dense, row-major tensor. Every popsim tensor is contiguous;
// layout changes (permute, slice) are explicit ops that produce new tensors.
using Shape = std::vector<int64_t>;

// The largest tensor popsim accepts, in elements (2^48: far beyond any IPU
// system's memory, and small enough that bytes of any dtype fit in 64 bits).
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 48;

// Why `shape` cannot be a tensor's (a negative dimension, or more than
// kMaxTensorElements elements), or nullopt. Readers of files and IR text
// check with it before they build types, so no count overflows later.
std::optional<std::string> shapeProblem(const Shape& shape);
// The number of elements; an InvalidInput error for a shape with a problem.
int64_t elementCount(const Shape& shape);
std::string shapeToString(const Shape& shape);
// Row-major strides, in elements.
std::vector<int64_t> contiguousStrides(const Shape& shape);
// NumPy/PyTorch broadcasting; nullopt when the shapes are incompatible.
std::optional<Shape> broadcastShapes(const Shape& a, const Shape& b);
// The permutation that undoes `perm` (permute by perm, then by this, is the identity).
std::vector<int64_t> inversePermutation(const std::vector<int64_t>& perm);
// Maps a possibly negative dimension index into [0, rank); nullopt if out of range.
std::optional<int64_t> normalizeDim(int64_t dim, int64_t rank);

} // namespace popsim::ir
