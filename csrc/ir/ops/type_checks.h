#pragma once

#include "common/check.h"
#include "ir/tensor_type.h"

#include <string>
#include <string_view>
#include <vector>

// Small checks shared by the type-inference functions of ir/ops. Each throws a
// Compilation error that names the input and gives expected and actual values.
namespace popsim::ir::ops {

inline void requireRank(const TensorType& type, int64_t rank, std::string_view what) {
  POPSIM_CHECK(type.rank() == rank, ErrorKind::Compilation, what, " must have ", rank,
               " dimensions, got ", type.rank(), " (", type.str(), ").");
}

inline void requireMinRank(const TensorType& type, int64_t rank, std::string_view what) {
  POPSIM_CHECK(type.rank() >= rank, ErrorKind::Compilation, what, " must have at least ", rank,
               " dimensions, got ", type.rank(), " (", type.str(), ").");
}

inline void requireDType(const TensorType& type, DType dtype, std::string_view what) {
  POPSIM_CHECK(type.dtype == dtype, ErrorKind::Compilation, what, " must be ", dtypeName(dtype),
               ", got ", type.str(), ".");
}

// A real-number tensor: float32, or float16 (stored and rounded as an IPU does).
inline void requireFloat(const TensorType& type, std::string_view what) {
  POPSIM_CHECK(isFloat(type.dtype), ErrorKind::Compilation, what, " must be f32 or f16, got ",
               type.str(), ".");
}

// A tensor of numbers that have an order: a float tensor, or int32 or int64.
inline void requireOrdered(const TensorType& type, std::string_view what) {
  POPSIM_CHECK(isFloat(type.dtype) || type.dtype == DType::Int32 || type.dtype == DType::Int64,
               ErrorKind::Compilation, what, " must be f32, f16, i32 or i64, got ", type.str(),
               ".");
}

inline void requireShape(const TensorType& type, const Shape& shape, std::string_view what) {
  POPSIM_CHECK(type.shape == shape, ErrorKind::Compilation, what, " must have shape ",
               shapeToString(shape), ", got ", shapeToString(type.shape), ".");
}

// A tensor of `shape` with the dtype of `like` (gradients take their operands' dtype).
inline TensorType typed(const TensorType& like, Shape shape) {
  return {like.dtype, std::move(shape)};
}

inline void requireFloats(const std::vector<TensorType>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    requireFloat(inputs[i], "input " + std::to_string(i));
  }
}

inline void requireLength(const std::vector<int64_t>& values, size_t length,
                          std::string_view what) {
  POPSIM_CHECK(values.size() == length, ErrorKind::Compilation, "attribute '", what, "' must have ",
               length, " values, got ", values.size(), ".");
}

} // namespace popsim::ir::ops
