#pragma once

#include "kernels/kernel_factory.h"

namespace popsim::kernels {

// sigmoid (silu = false) or SiLU over the IPU's threads, in float with
// ATen's formulas.
std::unique_ptr<Kernel> createLogisticKernel(const KernelRequest& request, bool silu);

} // namespace popsim::kernels
