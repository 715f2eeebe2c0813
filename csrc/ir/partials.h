#pragma once

// Which matrix products sum their products in float16 partials, as an IPU
// does with Precision.setPartialsType(torch.half) (the partials' rounding is
// kernels/reference/half_partials_product.h's; their memory,
// memory/op_temporaries.h's).
#include "ir/node.h"

#include <string_view>

namespace popsim::ir {

// The optional convolution attribute popsim.MultiConv's partialsTypes sets:
// true for float16 partials, false for float32 ones, whatever the session's
// setting.
inline constexpr std::string_view kHalfPartials = "half_partials";

// Whether `node` (a matmul or convolution family op) sums in float16
// partials: only with float16 operands, as the op's own half_partials
// attribute says, or else as the session does (`sessionHalfPartials`).
inline bool sumsInHalfPartials(const Node& node, bool sessionHalfPartials) {
  if (node.input(0)->type().dtype != DType::Float16) return false;
  return node.attrs().has(kHalfPartials) ? node.attrs().getBool(kHalfPartials)
                                         : sessionHalfPartials;
}

} // namespace popsim::ir
