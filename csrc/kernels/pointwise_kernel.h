#pragma once

#include "kernels/kernel_factory.h"

#include <string_view>

namespace popsim::kernels {

// pointwise and pointwise_grad over the IPU's threads: oneDNN where it
// computes what PyTorch does, popsim's vectorised formulas in double
// precision otherwise.
std::unique_ptr<Kernel> createPointwiseKernel(const KernelRequest& request);
// An op of another family computed by the pointwise formula `function` (one
// without parameters): log runs "log"'s value, GELU's gradient from (dy, x)
// "gelu"'s derivative (gradient = true).
std::unique_ptr<Kernel> createFormulaKernel(const KernelRequest& request, std::string_view function,
                                            bool gradient = false);
// activation_grad: GELU's on its formula, nullptr (the reference loop) otherwise.
std::unique_ptr<Kernel> createActivationGradKernel(const KernelRequest& request);

} // namespace popsim::kernels
