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

float expRounded(float x) { return static_cast<float>(std::exp(static_cast<double>(x))); }

// sigmoid(x) = 1 / (1 + exp(-x)) and silu(x) = x / (1 + exp(-x)), in float
// as ATen's kernels compute them, but with exp(-x) rounded to float once
// from double precision (SLEEF's vectors with AVX2 or AVX-512,
// vector/elementwise_loops.h; libm's exp otherwise): within half an ulp
// where ATen's float exp is within one. oneDNN's logistic and swish are up
// to 2 ulp off, and even eager's own rounding was enough to move
// squeeze-excitation gradients (efficientnet_b1) further from float64 than
// eager PyTorch's when popsim's other kernels round differently. NaN stays
// NaN and infinities give ATen's results, as the formulas are the same.
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
          y_[i] = x_[i] / (1.0f + expRounded(-x_[i]));
      } else {
        for (int64_t i = first; i < end; ++i)
          y_[i] = 1.0f / (1.0f + expRounded(-x_[i]));
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
