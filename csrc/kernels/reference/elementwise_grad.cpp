#include "common/check.h"
#include "kernels/reference/families.h"

#include <cmath>

namespace popsim::kernels::reference {
namespace {

template <typename Fn>
void mapGrad(const Inputs& inputs, const Outputs& outputs, int64_t n, Fn derivative) {
  const auto* dy = static_cast<const float*>(inputs[0]);
  const auto* ref = static_cast<const float*>(inputs[1]);
  auto* dx = static_cast<float*>(outputs[0]);
  for (int64_t i = 0; i < n; ++i) {
    dx[i] = static_cast<float>(dy[i] * derivative(static_cast<double>(ref[i])));
  }
}

} // namespace

// dX = dY * f'(...) with the formulas of PyTorch's backward kernels; `ref` is
// the forward input (relu, gelu, abs) or output (sigmoid, tanh).
void elementwiseGrad(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const int64_t n = node.output()->type().numel();
  const std::string& activation = node.attrs().getString("activation");
  if (activation == "relu") {
    return mapGrad(inputs, outputs, n, [](double y) { return y > 0 ? 1.0 : 0.0; });
  }
  if (activation == "sigmoid") {
    return mapGrad(inputs, outputs, n, [](double y) { return (1.0 - y) * y; });
  }
  if (activation == "tanh") {
    return mapGrad(inputs, outputs, n, [](double y) { return 1.0 - y * y; });
  }
  if (activation == "abs") {
    return mapGrad(inputs, outputs, n, [](double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); });
  }
  if (activation == "gelu") {
    return mapGrad(inputs, outputs, n, [](double x) {
      const double cdf = 0.5 * (1.0 + std::erf(x * M_SQRT1_2));
      const double pdf = std::exp(-0.5 * x * x) * 0.5 * M_2_SQRTPI * M_SQRT1_2;
      return cdf + x * pdf;
    });
  }
  if (activation == "gelu_tanh") {
    return mapGrad(inputs, outputs, n, [](double x) {
      const double beta = M_SQRT2 * M_2_SQRTPI * 0.5;
      const double kappa = 0.044715;
      const double inner = beta * (x + kappa * x * x * x);
      const double t = std::tanh(inner);
      const double left = 0.5 * x;
      const double right = 1.0 + t;
      return 0.5 * right + left * (1.0 - t * t) * beta * (1.0 + 3.0 * kappa * x * x);
    });
  }
  POPSIM_ASSERT(false, "no gradient for activation ", activation, ".");
}

} // namespace popsim::kernels::reference
