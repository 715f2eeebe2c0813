#pragma once

#include "kernels/kernel_factory.h"

// oneDNN kernel builders, one per op family. Each returns nullptr when oneDNN
// cannot express the node exactly (the factory then uses the reference kernel).
namespace popsim::kernels {

std::unique_ptr<Kernel> createConvolutionKernel(const KernelRequest& request);
std::unique_ptr<Kernel> createMatMulKernel(const KernelRequest& request);
std::unique_ptr<Kernel> createEltwiseKernel(const KernelRequest& request);
std::unique_ptr<Kernel> createBinaryKernel(const KernelRequest& request);
std::unique_ptr<Kernel> createSoftmaxKernel(const KernelRequest& request);
std::unique_ptr<Kernel> createPoolingKernel(const KernelRequest& request);
std::unique_ptr<Kernel> createNormalizationKernel(const KernelRequest& request);
std::unique_ptr<Kernel> createLayoutKernel(const KernelRequest& request);
std::unique_ptr<Kernel> createReductionKernel(const KernelRequest& request);

} // namespace popsim::kernels
