#pragma once

#include "kernels/kernel_factory.h"

namespace popsim::kernels {

// ctc_loss or its gradient (CtcLossGrad): the reference's recursions with
// their per-element maths on SLEEF's vectors where the CPU has AVX2, the
// samples over the IPU's threads.
std::unique_ptr<Kernel> createCtcLossKernel(const KernelRequest& request);

} // namespace popsim::kernels
