#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace popsim::ir {

// Dimensions of a dense, row-major tensor. Every popsim tensor is contiguous;
// layout changes (permute, slice) are explicit ops that produce new tensors.
using Shape = std::vector<int64_t>;

int64_t elementCount(const Shape& shape);
std::string shapeToString(const Shape& shape);
// Row-major strides, in elements.
std::vector<int64_t> contiguousStrides(const Shape& shape);
// NumPy/PyTorch broadcasting; nullopt when the shapes are incompatible.
std::optional<Shape> broadcastShapes(const Shape& a, const Shape& b);
// Maps a possibly negative dimension index into [0, rank); nullopt if out of range.
std::optional<int64_t> normalizeDim(int64_t dim, int64_t rank);

} // namespace popsim::ir
