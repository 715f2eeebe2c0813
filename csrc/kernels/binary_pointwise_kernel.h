#pragma once

#include "kernels/kernel_factory.h"

namespace popsim::kernels {

// binary_pointwise, binary_pointwise_grad and where over the IPU's threads.
std::unique_ptr<Kernel> createBinaryPointwiseKernel(const KernelRequest& request);

} // namespace popsim::kernels
