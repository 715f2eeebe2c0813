#pragma once

#include "ir/graph.h"

#include <unordered_map>
#include <vector>

namespace popsim::compiler {

// Adds the backward ops computing d(loss)/d(value) for each value in `wrt`
// (Backward phase, after the forward ops) and returns the gradient of each
// value the loss depends on. The loss's own gradient is `seed` (a scalar of
// the loss's dtype: the loss scaling factor), or 1 without one. Throws
// Unsupported naming the op and its source line when an op on the way from
// `wrt` to the loss has no gradient rule.
std::unordered_map<const ir::Value*, ir::Value*> buildGradients(ir::Graph& graph, ir::Value* loss,
                                                                const std::vector<ir::Value*>& wrt,
                                                                ir::Value* seed = nullptr);

} // namespace popsim::compiler
