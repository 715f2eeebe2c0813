#pragma once

// Ops whose every output element is one of their input elements, its
// negation or zero: a ReLU, an absolute value, a max pooling, a copy of
// parts of a tensor, and the gradients of ReLU and abs. Their results are
// exact in the inputs' type, so float16 inputs give float16 values that
// rounding to float16, to nearest or stochastically, leaves as they are
// (the kernel factory skips that pass).
#include "ir/node.h"

namespace popsim::ir {

inline bool selectsInputValues(const Node& node) {
  switch (node.kind()) {
  case OpKind::Relu:
  case OpKind::Abs:
  case OpKind::MaxPool2d:
  case OpKind::MaxPool2dTrain:
  case OpKind::Permute:
  case OpKind::Slice:
  case OpKind::Concat:
  case OpKind::Broadcast: return true;
  case OpKind::ActivationGrad: { // dY where the input is positive, else 0; or dY x sign
    const std::string& activation = node.attrs().getString("activation");
    return activation == "relu" || activation == "abs";
  }
  default: return false;
  }
}

} // namespace popsim::ir
