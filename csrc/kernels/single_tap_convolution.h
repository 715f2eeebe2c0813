#pragma once

#include "kernels/kernel_factory.h"

namespace popsim::kernels {

// 2-D convolution, convolution_grad_input and convolution_grad_weight as oneDNN matmuls when
// the window meets the input at one tap only (1x1 images); nullptr otherwise.
std::unique_ptr<Kernel> createSingleTapConvolution(const KernelRequest& request);

} // namespace popsim::kernels
