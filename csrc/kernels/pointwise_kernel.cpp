#include "kernels/pointwise_kernel.h"

#include "kernels/reference/pointwise.h"

#include <omp.h>

#include <algorithm>

namespace popsim::kernels {
namespace {

// Splits the elements over the IPU's OpenMP threads, in blocks large enough
// that a thread's start-up does not dominate.
class PointwiseKernel final : public Kernel {
public:
  explicit PointwiseKernel(const KernelRequest& request)
      : function_(reference::pointwiseFunctionOf(request.node)),
        params_(request.node.attrs().getFloats("params")),
        gradient_(request.node.kind() == ir::OpKind::PointwiseGrad),
        count_(request.outputs[0].type.numel()) {
    for (const BoundTensor& input : request.inputs) {
      inputs_.push_back(static_cast<const float*>(input.data));
    }
    output_ = static_cast<float*>(request.outputs[0].data);
  }

  void run(dnnl::stream&) override {
    constexpr int64_t kBlock = 4096;
    const int64_t blocks = (count_ + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (blocks > 1)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t first = b * kBlock;
      const int64_t count = std::min(kBlock, count_ - first);
      if (gradient_) {
        reference::pointwiseGradients(function_, params_.data(), inputs_[0] + first,
                                      inputs_[1] + first, output_ + first, count);
      } else {
        reference::pointwiseValues(function_, params_.data(), inputs_[0] + first, output_ + first,
                                   count);
      }
    }
  }

  std::string implementation() const override { return "popsim:pointwise"; }

private:
  const ir::PointwiseFunction& function_;
  std::vector<double> params_;
  bool gradient_;
  int64_t count_;
  std::vector<const float*> inputs_;
  float* output_ = nullptr;
};

} // namespace

std::unique_ptr<Kernel> createPointwiseKernel(const KernelRequest& request) {
  return std::make_unique<PointwiseKernel>(request);
}

} // namespace popsim::kernels
