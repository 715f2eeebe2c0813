#pragma once

#include "kernels/kernel_factory.h"

namespace popsim::kernels {

// pointwise and pointwise_grad over the IPU's threads: oneDNN where it
// computes what PyTorch does, popsim's vectorised formulas in double
// precision otherwise.
std::unique_ptr<Kernel> createPointwiseKernel(const KernelRequest& request);

} // namespace popsim::kernels
