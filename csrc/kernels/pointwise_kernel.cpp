#include "kernels/pointwise_kernel.h"

#include "kernels/dnnl_utils.h"
#include "kernels/logistic_kernel.h"
#include "kernels/reference/pointwise.h"

#include <omp.h>

#include <algorithm>
#include <optional>
#include <utility>

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

// oneDNN's eltwise algorithm computing a function as PyTorch does (within
// float rounding), with its alpha; nothing for the others.
std::optional<std::pair<dnnl::algorithm, float>> dnnlAlgorithmOf(const ir::Node& node) {
  const std::string& name = node.attrs().getString("function");
  const std::vector<double>& params = node.attrs().getFloats("params");
  using dnnl::algorithm;
  if (name == "hardswish") return std::make_pair(algorithm::eltwise_hardswish, 0.0f);
  if (name == "mish") return std::make_pair(algorithm::eltwise_mish, 0.0f);
  if (name == "log_sigmoid") return std::make_pair(algorithm::eltwise_logsigmoid, 0.0f);
  if (name == "elu" && params[1] == 1.0 && params[2] == 1.0) {
    return std::make_pair(algorithm::eltwise_elu, static_cast<float>(params[0]));
  }
  if (name == "pow" && params[0] == 2.0) return std::make_pair(algorithm::eltwise_square, 0.0f);
  return std::nullopt;
}

} // namespace

// oneDNN's vectorised eltwise where it has the function (its jit kernels may
// turn NaN into numbers, so NaN inputs are passed through afterwards, as
// PyTorch gives NaN for NaN in all of them); the table's double-precision
// loop otherwise and for every gradient.
std::unique_ptr<Kernel> createPointwiseKernel(const KernelRequest& request) {
  if (request.node.kind() == ir::OpKind::Pointwise &&
      request.node.attrs().getString("function") == "silu") {
    return createLogisticKernel(request, true); // ATen's formula, not oneDNN's swish
  }
  const auto algorithm =
      request.node.kind() == ir::OpKind::Pointwise ? dnnlAlgorithmOf(request.node) : std::nullopt;
  if (!algorithm.has_value()) {
    return std::make_unique<PointwiseKernel>(request);
  }
  return eltwiseKernel(request, algorithm->first, algorithm->second, 0.0f, true);
}

} // namespace popsim::kernels
