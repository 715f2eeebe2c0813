#pragma once

#include "ir/tensor_type.h"

namespace popsim::runtime {

// A host tensor popsim reads from or writes to: contiguous, row-major, not
// owned. The Python bindings make these from torch tensors without copying.
struct TensorView {
  void* data = nullptr;
  ir::DType dtype = ir::DType::Float32;
  ir::Shape shape;

  size_t bytes() const {
    return static_cast<size_t>(ir::elementCount(shape)) * ir::elementSize(dtype);
  }
  ir::TensorType type() const { return {dtype, shape}; }
};

} // namespace popsim::runtime
