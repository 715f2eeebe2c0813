#pragma once

#include "ir/node.h"

#include <vector>

namespace popsim::kernels::reference {

// Computes `node` with plain C++ loops over contiguous row-major buffers of
// the node's input and output types. This is the oracle the oneDNN kernels are
// tested against, and the kernel used where oneDNN has no primitive (e.g.
// embedding lookups, adaptive pooling with uneven bins, int64 layout ops).
// Accumulations use double, as PyTorch's CPU kernels do for float. Ops that
// update weights or state in place write through their input pointers.
void evaluate(const ir::Node& node, const std::vector<void*>& inputs,
              const std::vector<void*>& outputs);

} // namespace popsim::kernels::reference
