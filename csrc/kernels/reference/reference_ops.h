#pragma once

#include "ir/node.h"

#include <vector>

namespace popsim::kernels::reference {

// Computes `node` with plain C++ loops over contiguous row-major buffers of
// the node's input and output types. This is the oracle the oneDNN kernels are
// tested against, and the kernel used where oneDNN has no primitive (e.g.
// embedding lookups, adaptive pooling with uneven bins, int64 layout ops).
// Accumulations use double, as PyTorch's CPU kernels do for float.
void evaluate(const ir::Node& node, const std::vector<const void*>& inputs,
              const std::vector<void*>& outputs);

} // namespace popsim::kernels::reference
