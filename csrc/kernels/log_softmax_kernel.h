#pragma once

#include "kernels/kernel_factory.h"

namespace popsim::kernels {

// log_softmax or its gradient (LogSoftmaxGrad) along `dim`, over the IPU's
// threads, one row (the elements along dim) at a time.
std::unique_ptr<Kernel> createLogSoftmaxKernel(const KernelRequest& request);

} // namespace popsim::kernels
