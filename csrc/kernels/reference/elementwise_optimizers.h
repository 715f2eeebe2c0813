#pragma once

#include "ir/node.h"
#include "kernels/reference/families.h"

#include <cstdint>

namespace popsim::kernels::reference {

// SGD, Adam/AdamW and RMSprop update each element of a parameter and its
// state from that element alone (LAMB does not: its trust ratio needs the
// whole parameter's norms), so their step can run a block of elements at a
// time, each block followed by other work while it is still in cache (the
// float16 rounding of the updated weights and state, half_optimizer_kernel.h).
// The results are those of one pass over all elements, bit for bit.
bool updatesEachElementAlone(ir::OpKind kind);
// The step over elements [begin, end) of the parameter (inputs as the
// node's: param, grad, hyper and the state).
void optimizerStepOver(const ir::Node& node, const Inputs& inputs, int64_t begin, int64_t end);

} // namespace popsim::kernels::reference
