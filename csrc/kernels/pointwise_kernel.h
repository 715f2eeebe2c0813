#pragma once

#include "kernels/kernel_factory.h"

namespace popsim::kernels {

// pointwise and pointwise_grad over the IPU's threads, in double precision.
std::unique_ptr<Kernel> createPointwiseKernel(const KernelRequest& request);

} // namespace popsim::kernels
