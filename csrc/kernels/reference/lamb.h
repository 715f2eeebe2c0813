#pragma once

#include "ir/node.h"
#include "kernels/reference/families.h"

namespace popsim::kernels::reference {

// LAMB's step in its two passes (inputs as lamb_update's), so that a
// sharded parameter can sum its norms over the replicas in between.
struct LambSquares {
  double weight = 0.0; // the parameter's squared 2-norm
  double update = 0.0; // the update direction's
};

// Updates the moments and writes the update direction into `update` (the
// parameter's element count); returns the squared norms of this part.
LambSquares lambDirection(const ir::Node& node, const Inputs& inputs, float* update);
// param -= lr * trust * update, the trust ratio from the whole parameter's
// and update's squared norms.
void lambApply(const ir::Node& node, const Inputs& inputs, const float* update,
               LambSquares squares);

} // namespace popsim::kernels::reference
