#include "kernels/pointwise_kernel.h"

#include "common/check.h"
#include "kernels/dnnl_utils.h"
#include "kernels/logistic_kernel.h"
#include "kernels/reference/pointwise.h"
#include "kernels/vector/elementwise_loops.h"

#include <omp.h>

#include <algorithm>
#include <optional>
#include <utility>

namespace popsim::kernels {
namespace {

// Splits the elements over the IPU's OpenMP threads, in blocks large enough
// that a thread's start-up does not dominate; each block runs the
// function's formula on vectors of doubles (vector/elementwise_loops.h), or
// one element at a time without AVX2.
class PointwiseKernel final : public Kernel {
public:
  // gradient: dx = dy * f'(x) from inputs (dy, x); otherwise y = f(x).
  PointwiseKernel(const KernelRequest& request, const ir::PointwiseFunction& function,
                  std::vector<double> params, bool gradient)
      : function_(function), params_(std::move(params)), gradient_(gradient),
        count_(request.outputs[0].type.numel()), loops_(vector::elementwiseLoops(vectorIsa())) {
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
      runBlock(first, std::min(kBlock, count_ - first));
    }
  }

  std::string implementation() const override {
    return loops_ ? std::string("vectorised:pointwise_") + loops_->isa : "popsim:pointwise";
  }

private:
  void runBlock(int64_t first, int64_t count) {
    const double* params = params_.data();
    const float* x = inputs_[0] + first;
    float* y = output_ + first;
    if (!gradient_) {
      if (loops_ && !reference::hasFloatPath(function_)) { // clamp, hardtanh: float is exact
        loops_->pointwiseValues(function_.index, params, x, y, count);
      } else {
        reference::pointwiseValues(function_, params, x, y, count);
      }
    } else if (loops_ && function_.derivative != nullptr) {
      loops_->pointwiseGradients(function_.index, params, x, inputs_[1] + first, y, count);
    } else {
      reference::pointwiseGradients(function_, params, x, inputs_[1] + first, y, count);
    }
  }

  const ir::PointwiseFunction& function_;
  std::vector<double> params_;
  bool gradient_;
  int64_t count_;
  std::optional<vector::ElementwiseLoops> loops_; // none: the reference loop
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
// PyTorch gives NaN for NaN in all of them); popsim's vectorised formulas
// otherwise and for every gradient. SiLU is never oneDNN's swish (up to 2 ulp
// off, which moved efficientnet's gradients) but ATen's float formula on
// SLEEF's exp, as eager PyTorch's (logistic_kernel.h).
std::unique_ptr<Kernel> createPointwiseKernel(const KernelRequest& request) {
  if (request.node.kind() == ir::OpKind::Pointwise &&
      request.node.attrs().getString("function") == "silu") {
    return createLogisticKernel(request, true); // ATen's formula, not oneDNN's swish
  }
  const auto algorithm =
      request.node.kind() == ir::OpKind::Pointwise ? dnnlAlgorithmOf(request.node) : std::nullopt;
  if (!algorithm.has_value()) {
    return std::make_unique<PointwiseKernel>(request, reference::pointwiseFunctionOf(request.node),
                                             request.node.attrs().getFloats("params"),
                                             request.node.kind() == ir::OpKind::PointwiseGrad);
  }
  return eltwiseKernel(request, algorithm->first, algorithm->second, 0.0f, true);
}

std::unique_ptr<Kernel> createFormulaKernel(const KernelRequest& request, std::string_view function,
                                            bool gradient) {
  const ir::PointwiseFunction* formula = ir::findPointwiseFunction(function);
  POPSIM_ASSERT(formula != nullptr && formula->parameters.empty() &&
                    (!gradient || formula->derivative != nullptr),
                "no formula named ", std::string(function), ".");
  return std::make_unique<PointwiseKernel>(request, *formula, std::vector<double>{}, gradient);
}

// GELU's gradients run their formulas; relu's, sigmoid's, tanh's and abs's
// repeat PyTorch's float arithmetic bit for bit in the reference loop,
// which the compiler vectorises (no calls).
std::unique_ptr<Kernel> createActivationGradKernel(const KernelRequest& request) {
  const std::string& activation = request.node.attrs().getString("activation");
  if (activation == "gelu" || activation == "gelu_tanh") {
    return createFormulaKernel(request, activation, true);
  }
  return nullptr;
}

} // namespace popsim::kernels
