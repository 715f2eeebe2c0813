#include "kernels/logistic_kernel.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

namespace popsim::kernels {
namespace {

// sigmoid(x) = 1 / (1 + exp(-x)) and silu(x) = x / (1 + exp(-x)), in float
// as ATen's vectorised kernels compute them, on libm's expf (within half an
// ulp; ATen's is within one). oneDNN's logistic and swish are up to 2 ulp
// off, which was enough to move squeeze-excitation gradients (efficientnet)
// further from float64 than eager PyTorch's. NaN stays NaN and infinities
// give ATen's results, as the formulas are the same.
class LogisticKernel final : public Kernel {
public:
  LogisticKernel(const KernelRequest& request, bool silu)
      : x_(static_cast<const float*>(request.inputs[0].data)),
        y_(static_cast<float*>(request.outputs[0].data)), count_(request.outputs[0].type.numel()),
        silu_(silu) {}

  void run(dnnl::stream&) override {
    constexpr int64_t kBlock = 4096;
    const int64_t blocks = (count_ + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (blocks > 1)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t end = std::min(count_, (b + 1) * kBlock);
      if (silu_) {
        for (int64_t i = b * kBlock; i < end; ++i)
          y_[i] = x_[i] / (1.0f + std::exp(-x_[i]));
      } else {
        for (int64_t i = b * kBlock; i < end; ++i)
          y_[i] = 1.0f / (1.0f + std::exp(-x_[i]));
      }
    }
  }

  std::string implementation() const override { return "popsim:logistic"; }

private:
  const float* x_;
  float* y_;
  int64_t count_;
  bool silu_;
};

} // namespace

std::unique_ptr<Kernel> createLogisticKernel(const KernelRequest& request, bool silu) {
  return std::make_unique<LogisticKernel>(request, silu);
}

} // namespace popsim::kernels
