#include "kernels/reference/pointwise.h"

#include "common/check.h"
#include "kernels/reference/families.h"

namespace popsim::kernels::reference {

namespace {

// clamp and hardtanh (ReLU6) in float, which the compiler vectorises: the
// same values as the table's (its double bounds, rounded to float, order
// float inputs as the double ones do), without a call per element.
bool boundedInFloat(const ir::PointwiseFunction& function, const double* params, const float* x,
                    float* y, int64_t count) {
  if (!hasFloatPath(function)) return false;
  const auto low = static_cast<float>(params[0]);
  const auto high = static_cast<float>(params[1]);
  for (int64_t i = 0; i < count; ++i) {
    const float v = x[i];
    const float raised = v < low ? low : v; // min(max(v, low), high): high wins if low > high
    y[i] = v != v ? v : (raised > high ? high : raised);
  }
  return true;
}

} // namespace

bool hasFloatPath(const ir::PointwiseFunction& function) {
  return function.name == "clamp" || function.name == "hardtanh";
}

void pointwiseValues(const ir::PointwiseFunction& function, const double* params, const float* x,
                     float* y, int64_t count) {
  if (boundedInFloat(function, params, x, y, count)) return;
  for (int64_t i = 0; i < count; ++i) {
    y[i] = static_cast<float>(function.value(static_cast<double>(x[i]), params));
  }
}

void pointwiseGradients(const ir::PointwiseFunction& function, const double* params,
                        const float* dy, const float* x, float* dx, int64_t count) {
  if (function.derivative == nullptr) { // piecewise constant: no gradient
    for (int64_t i = 0; i < count; ++i)
      dx[i] = 0.0f;
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    dx[i] = static_cast<float>(static_cast<double>(dy[i]) *
                               function.derivative(static_cast<double>(x[i]), params));
  }
}

const ir::PointwiseFunction& pointwiseFunctionOf(const ir::Node& node) {
  const ir::PointwiseFunction* function =
      ir::findPointwiseFunction(node.attrs().getString("function"));
  POPSIM_ASSERT(function != nullptr, node.describe(), " names no pointwise function.");
  return *function;
}

void pointwise(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const ir::PointwiseFunction& function = pointwiseFunctionOf(node);
  const double* params = node.attrs().getFloats("params").data();
  const int64_t count = node.output()->type().numel();
  if (node.kind() == ir::OpKind::Pointwise) {
    return pointwiseValues(function, params, static_cast<const float*>(inputs[0]),
                           static_cast<float*>(outputs[0]), count);
  }
  pointwiseGradients(function, params, static_cast<const float*>(inputs[0]),
                     static_cast<const float*>(inputs[1]), static_cast<float*>(outputs[0]), count);
}

} // namespace popsim::kernels::reference
