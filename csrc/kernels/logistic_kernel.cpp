#include "kernels/logistic_kernel.h"

#include "kernels/cpu_isa.h"
#include "kernels/vector/elementwise_loops.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

namespace popsim::kernels {
namespace {

// sigmoid(x) = 1 / (1 + exp(-x)) and silu(x) = x / (1 + exp(-x)), in float
// as ATen's vectorised kernels compute them: on SLEEF's float exp, as
// theirs, with AVX2 or AVX-512 (vector/elementwise_loops.h), otherwise on
// libm's expf (within half an ulp; SLEEF's is within one). oneDNN's logistic
// and swish are up to 2 ulp off, which was enough to move squeeze-excitation
// gradients (efficientnet) further from float64 than eager PyTorch's. NaN
// stays NaN and infinities give ATen's results, as the formulas are the same.
class LogisticKernel final : public Kernel {
public:
  LogisticKernel(const KernelRequest& request, bool silu)
      : x_(static_cast<const float*>(request.inputs[0].data)),
        y_(static_cast<float*>(request.outputs[0].data)), count_(request.outputs[0].type.numel()),
        silu_(silu), loops_(vector::elementwiseLoops(vectorIsa())) {}

  void run(dnnl::stream&) override {
    constexpr int64_t kBlock = 4096;
    const int64_t blocks = (count_ + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (blocks > 1)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t first = b * kBlock;
      const int64_t end = std::min(count_, first + kBlock);
      if (loops_) {
        loops_->logistic(x_ + first, y_ + first, end - first, silu_);
      } else if (silu_) {
        for (int64_t i = first; i < end; ++i)
          y_[i] = x_[i] / (1.0f + std::exp(-x_[i]));
      } else {
        for (int64_t i = first; i < end; ++i)
          y_[i] = 1.0f / (1.0f + std::exp(-x_[i]));
      }
    }
  }

  std::string implementation() const override {
    return loops_ ? std::string("vectorised:logistic_") + loops_->isa : "popsim:logistic";
  }

private:
  const float* x_;
  float* y_;
  int64_t count_;
  bool silu_;
  std::optional<vector::ElementwiseLoops> loops_; // none: libm, one element at a time
};

} // namespace

std::unique_ptr<Kernel> createLogisticKernel(const KernelRequest& request, bool silu) {
  return std::make_unique<LogisticKernel>(request, silu);
}

} // namespace popsim::kernels
