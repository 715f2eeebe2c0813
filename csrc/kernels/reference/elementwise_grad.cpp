#include "common/check.h"
#include "kernels/reference/families.h"

#include <cmath>

namespace popsim::kernels::reference {
namespace {

// dX[i] = fn(dY[i], ref[i]) over n elements (vectorisable: no calls, no branches).
template <typename Fn>
void mapGrad(const Inputs& inputs, const Outputs& outputs, int64_t n, Fn fn) {
  const auto* dy = static_cast<const float*>(inputs[0]);
  const auto* ref = static_cast<const float*>(inputs[1]);
  auto* dx = static_cast<float*>(outputs[0]);
  for (int64_t i = 0; i < n; ++i) {
    dx[i] = fn(dy[i], ref[i]);
  }
}

} // namespace

// dX from dY and `ref`, the forward input (gelu, abs) or output (relu,
// sigmoid, tanh), with the float arithmetic of PyTorch's CPU backward
// kernels, so that results are bit-identical to eager PyTorch's: relu is
// threshold_backward, sigmoid (dy * (1 - y)) * y, tanh dy * (1 - y * y) with
// the fused multiply-add PyTorch's vectorised kernel compiles to. GELU's
// kernels use SLEEF's float erf and exp, which popsim does not reproduce;
// its derivative is computed in double and rounded once (the kernel runs
// the same formula vectorised: "gelu" in ir/pointwise_formulas.h).
void elementwiseGrad(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const int64_t n = node.output()->type().numel();
  const std::string& activation = node.attrs().getString("activation");
  if (activation == "relu") {
    return mapGrad(inputs, outputs, n, [](float dy, float y) { return y <= 0.0f ? 0.0f : dy; });
  }
  if (activation == "sigmoid") {
    return mapGrad(inputs, outputs, n, [](float dy, float y) { return dy * (1.0f - y) * y; });
  }
  if (activation == "tanh") {
    return mapGrad(inputs, outputs, n,
                   [](float dy, float y) { return dy * std::fma(-y, y, 1.0f); });
  }
  if (activation == "abs") {
    return mapGrad(inputs, outputs, n, [](float dy, float x) {
      return dy * (x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f));
    });
  }
  if (activation == "gelu") {
    return mapGrad(inputs, outputs, n, [](float dy, float xf) {
      const double x = xf;
      const double cdf = 0.5 * (1.0 + std::erf(x * M_SQRT1_2));
      const double pdf = std::exp(-0.5 * x * x) * 0.5 * M_2_SQRTPI * M_SQRT1_2;
      return static_cast<float>(dy * (cdf + x * pdf));
    });
  }
  if (activation == "gelu_tanh") {
    return mapGrad(inputs, outputs, n, [](float dy, float xf) {
      const double x = xf;
      const double beta = M_SQRT2 * M_2_SQRTPI * 0.5;
      const double kappa = 0.044715;
      const double inner = beta * (x + kappa * x * x * x);
      const double t = std::tanh(inner);
      const double left = 0.5 * x;
      const double right = 1.0 + t;
      return static_cast<float>(
          dy * (0.5 * right + left * (1.0 - t * t) * beta * (1.0 + 3.0 * kappa * x * x)));
    });
  }
  POPSIM_ASSERT(false, "no gradient for activation ", activation, ".");
}

} // namespace popsim::kernels::reference
