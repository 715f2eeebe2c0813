#pragma once

#include "frontend/lowering_context.h"
#include "ir/graph.h"

#include <utility>
#include <vector>

namespace popsim::frontend {

using MarkedLosses = std::vector<std::pair<ir::Value*, LoweringContext::LossKind>>;

// Finds the value a training model minimises and sets it as the graph's loss.
// When the model uses popsim.identity_loss, the loss is the one output that
// depends on an identity_loss; otherwise the one output that depends on a
// PyTorch loss function. Throws Compilation errors in PopTorch's terms when
// there is no such output, several, or one that is not a scalar.
void identifyLoss(ir::Graph& graph, const MarkedLosses& losses);

} // namespace popsim::frontend
