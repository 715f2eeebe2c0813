#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace popsim::frontend {

// How a model's input or output nests its tensors, as TorchScript types it: a
// tensor, or a tuple, list or dict (string keys) of structures. popsim's IR
// has flat inputs and outputs; a structure's tensors are its leaves taken
// depth-first, a dict's in the order of `keys`.
struct ValueStructure {
  enum class Kind { Tensor, Tuple, List, Dict };
  Kind kind = Kind::Tensor;
  std::vector<ValueStructure> elements;
  std::vector<std::string> keys; // a dict's, one per element

  size_t tensorCount() const {
    if (kind == Kind::Tensor) return 1;
    size_t count = 0;
    for (const ValueStructure& element : elements)
      count += element.tensorCount();
    return count;
  }
};

} // namespace popsim::frontend
