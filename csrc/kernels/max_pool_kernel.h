#pragma once

#include "kernels/kernel_factory.h"

namespace popsim::kernels {

// max_pool2d and max_pool2d_train (values and PyTorch's indices) with
// vectorised loops for the CPU's ISA. Returns nullptr for what it does not
// handle (the factory then uses the reference kernel).
std::unique_ptr<Kernel> createMaxPoolKernel(const KernelRequest& request);

} // namespace popsim::kernels
