#pragma once

#include "ir/node.h"

#include <cstdint>
#include <limits>

namespace popsim::memory {

// PopTorch's default availableMemoryProportion: the share of each IPU's
// memory a matmul or convolution may use for its temporaries.
constexpr double kDefaultAvailableMemoryProportion = 0.6;

// Temporary memory of one matmul or convolution. Its two operands are
// gathered onto the tiles that use them and its partial sums are kept in
// fp32, so unbounded it needs the operands' bytes plus the output's. When
// that exceeds the budget (availableMemoryProportion x IPU memory), the op
// runs in serial passes, each over an equal share of the larger operand, so
// each pass needs 1 / passes of the temporaries; every pass exchanges the
// smaller operand again and syncs (PopLibs' planner makes the same trade,
// per tile and with more plan shapes; popsim models it on the IPU's total).
struct OpTemporaries {
  uint64_t unboundedBytes = 0; // in one pass
  uint64_t bytes = 0;          // in each of `passes`: at most the budget
  uint64_t passes = 1;
  uint64_t smallerOperandBytes = 0; // exchanged again by every extra pass
  uint64_t partialElementBytes = 4; // float32 partial sums, or float16 with half partials
};

// Whether the op's temporaries are planned (its schema says: matmuls,
// convolutions and their gradients); other ops work in place on their
// inputs and outputs.
bool hasPlannedTemporaries(const ir::Node& node);

// Zero bytes and one pass for ops without planned temporaries. The partial
// sums are float32, or float16 with `halfPartials` and float16 operands.
OpTemporaries planOpTemporaries(const ir::Node& node,
                                uint64_t budgetBytes = std::numeric_limits<uint64_t>::max(),
                                bool halfPartials = false);

} // namespace popsim::memory
