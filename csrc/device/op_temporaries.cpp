#include "device/op_temporaries.h"

#include <algorithm>

namespace popsim::device {

bool hasPlannedTemporaries(const ir::Node& node) {
  switch (node.kind()) {
  case ir::OpKind::Convolution:
  case ir::OpKind::Linear:
  case ir::OpKind::MatMul:
  case ir::OpKind::ConvolutionGradInput:
  case ir::OpKind::ConvolutionGradWeight:
  case ir::OpKind::LinearGradWeight: return true;
  default: return false;
  }
}

OpTemporaries planOpTemporaries(const ir::Node& node, uint64_t budgetBytes) {
  OpTemporaries temporaries;
  if (!hasPlannedTemporaries(node)) return temporaries;
  // The two operands multiplied (a bias, if any, is added once at the end).
  const uint64_t first = node.input(0)->type().bytes();
  const uint64_t second = node.input(1)->type().bytes();
  temporaries.smallerOperandBytes = std::min(first, second);
  temporaries.unboundedBytes = first + second + node.output()->type().bytes();
  const uint64_t budget = std::max<uint64_t>(budgetBytes, 1);
  temporaries.passes = std::max<uint64_t>(1, (temporaries.unboundedBytes + budget - 1) / budget);
  temporaries.bytes = (temporaries.unboundedBytes + temporaries.passes - 1) / temporaries.passes;
  return temporaries;
}

} // namespace popsim::device
