#pragma once

#include "ir/dtype.h"
#include "ir/shape.h"

#include <string>

namespace popsim::ir {

// The static type of every IR value: element type and shape, both known at
// compile time (popsim compiles one program per input signature, like an IPU).
struct TensorType {
  DType dtype = DType::Float32;
  Shape shape;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const { return elementCount(shape); }
  // Bytes on the simulated IPU: what memory plans, reports and costs count.
  size_t bytes() const { return static_cast<size_t>(numel()) * elementSize(dtype); }
  // Bytes of the host buffer that holds it (float16 in float32 carriers).
  size_t storageBytes() const { return static_cast<size_t>(numel()) * storageSize(dtype); }
  // "f32[8,10]"
  std::string str() const;

  bool operator==(const TensorType& other) const {
    return dtype == other.dtype && shape == other.shape;
  }
  bool operator!=(const TensorType& other) const { return !(*this == other); }
};

} // namespace popsim::ir
