#include "memory/op_temporaries.h"

#include "ir/op_schema.h"
#include "ir/partials.h"

#include <algorithm>

namespace popsim::memory {

bool hasPlannedTemporaries(const ir::Node& node) { return node.schema().plannedTemporaries; }

OpTemporaries planOpTemporaries(const ir::Node& node, uint64_t budgetBytes, bool halfPartials) {
  OpTemporaries temporaries;
  if (!hasPlannedTemporaries(node)) return temporaries;
  // The two operands multiplied (a bias, if any, is added once at the end),
  // and the partial sums: float32, or float16 for float16 operands with half
  // partials (Precision.setPartialsType).
  const uint64_t first = node.input(0)->type().bytes();
  const uint64_t second = node.input(1)->type().bytes();
  const bool half = ir::sumsInHalfPartials(node, halfPartials);
  const uint64_t partials = static_cast<uint64_t>(node.output()->type().numel()) * (half ? 2u : 4u);
  temporaries.smallerOperandBytes = std::min(first, second);
  temporaries.partialElementBytes = half ? 2u : 4u;
  temporaries.unboundedBytes = first + second + partials;
  const uint64_t budget = std::max<uint64_t>(budgetBytes, 1);
  temporaries.passes = std::max<uint64_t>(1, (temporaries.unboundedBytes + budget - 1) / budget);
  temporaries.bytes = (temporaries.unboundedBytes + temporaries.passes - 1) / temporaries.passes;
  return temporaries;
}

} // namespace popsim::memory
