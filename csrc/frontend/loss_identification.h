#pragma once

#include "frontend/lowering_context.h"
#include "ir/graph.h"

#include <utility>
#include <vector>

namespace popsim::frontend {

using MarkedLosses = std::vector<std::pair<ir::Value*, LoweringContext::LossKind>>;

// Finds the value a training model minimises and sets it as the graph's loss.
// When the model uses popsim.identity_loss, its losses are the outputs that
// depend on an identity_loss; otherwise the outputs that depend on a PyTorch
// loss function. A loss another returned loss is computed from is a part and
// not minimised again; several independent losses are minimised as their sum.
// Throws Compilation errors when there is no loss or one is not a scalar.
void identifyLoss(ir::Graph& graph, const MarkedLosses& losses);

} // namespace popsim::frontend
