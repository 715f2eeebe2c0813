#pragma once

#include "ir/graph.h"

namespace popsim::compiler {

// Removes torch.autograd.Functions' gradient boundaries (custom_gradient,
// whose readers then read the forward's outputs) and their backward
// templates (the ops reading gradient_placeholder values), which autodiff
// has copied where gradients flow (ir/ops/custom_gradient.cpp).
void removeCustomGradients(ir::Graph& graph);

} // namespace popsim::compiler
