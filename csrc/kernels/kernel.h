#pragma once

#include "ir/tensor_type.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <string>

namespace popsim::kernels {

// A tensor bound to device memory: where its bytes are and what they hold.
struct BoundTensor {
  void* data = nullptr;
  ir::TensorType type;
};

// The executable form of one IR node. Kernels are built once, at compile
// time, with their operands bound to fixed device addresses, so running one
// is a single call with no allocation or lookup.
class Kernel {
public:
  virtual ~Kernel() = default;
  virtual void run(dnnl::stream& stream) = 0;
  // Which implementation runs: "onednn:<oneDNN's name>" or "reference".
  virtual std::string implementation() const = 0;
};

} // namespace popsim::kernels
