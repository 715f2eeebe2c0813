#include "common/check.h"
#include "kernels/reference/families.h"
#include "kernels/reference/indexing.h"

#include <cmath>

namespace popsim::kernels::reference {
namespace {

template <typename Fn>
void mapUnary(const Inputs& inputs, const Outputs& outputs, int64_t n, Fn fn) {
  const auto* x = static_cast<const float*>(inputs[0]);
  auto* y = static_cast<float*>(outputs[0]);
  for (int64_t i = 0; i < n; ++i) {
    y[i] = static_cast<float>(fn(static_cast<double>(x[i])));
  }
}

// a op b with broadcasting: iterate the output, with stride 0 along dimensions
// an operand broadcasts, and a contiguous loop over the last dimension.
template <typename Fn>
void mapBinary(const ir::Node& node, const Inputs& inputs, const Outputs& outputs, Fn fn) {
  const auto* a = static_cast<const float*>(inputs[0]);
  const auto* b = static_cast<const float*>(inputs[1]);
  auto* y = static_cast<float*>(outputs[0]);
  const ir::Shape& ys = node.output()->type().shape;
  if (ys.empty()) {
    y[0] = fn(a[0], b[0]);
    return;
  }
  const auto sa = broadcastStrides(node.input(0)->type().shape, ys);
  const auto sb = broadcastStrides(node.input(1)->type().shape, ys);
  const int64_t inner = ys.back();
  const int64_t innerA = sa.back();
  const int64_t innerB = sb.back();
  const ir::Shape outer(ys.begin(), ys.end() - 1);
  const std::vector<int64_t> outerA(sa.begin(), sa.end() - 1);
  const std::vector<int64_t> outerB(sb.begin(), sb.end() - 1);
  forEachIndex(outer, [&](const std::vector<int64_t>& index) {
    const float* pa = a + dot(index, outerA);
    const float* pb = b + dot(index, outerB);
    for (int64_t j = 0; j < inner; ++j) {
      *y++ = fn(pa[j * innerA], pb[j * innerB]);
    }
  });
}

// affine on integer tensors (counters): exact integer arithmetic.
template <typename T>
void integerAffine(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* x = static_cast<const T*>(inputs[0]);
  auto* y = static_cast<T*>(outputs[0]);
  const auto scale = static_cast<T>(node.attrs().getFloat("scale"));
  const auto shift = static_cast<T>(node.attrs().getFloat("shift"));
  for (int64_t i = 0; i < node.output()->type().numel(); ++i) {
    y[i] = scale * x[i] + shift;
  }
}

} // namespace

void unaryElementwise(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const int64_t n = node.output()->type().numel();
  if (node.kind() == ir::OpKind::Affine && node.output()->type().dtype == ir::DType::Int64) {
    return integerAffine<int64_t>(node, inputs, outputs);
  }
  if (node.kind() == ir::OpKind::Affine && node.output()->type().dtype == ir::DType::Int32) {
    return integerAffine<int32_t>(node, inputs, outputs);
  }
  switch (node.kind()) {
  case ir::OpKind::Abs: return mapUnary(inputs, outputs, n, [](double v) { return std::fabs(v); });
  case ir::OpKind::Relu:
    return mapUnary(inputs, outputs, n, [](double v) { return v < 0 ? 0.0 : v; }); // NaN stays
  case ir::OpKind::Sigmoid:
    return mapUnary(inputs, outputs, n, [](double v) { return 1.0 / (1.0 + std::exp(-v)); });
  case ir::OpKind::Tanh: return mapUnary(inputs, outputs, n, [](double v) { return std::tanh(v); });
  case ir::OpKind::Exp: return mapUnary(inputs, outputs, n, [](double v) { return std::exp(v); });
  case ir::OpKind::Log: return mapUnary(inputs, outputs, n, [](double v) { return std::log(v); });
  case ir::OpKind::Sqrt: return mapUnary(inputs, outputs, n, [](double v) { return std::sqrt(v); });
  case ir::OpKind::Gelu:
    if (node.attrs().getString("approximate") == "tanh") {
      return mapUnary(inputs, outputs, n, [](double v) {
        const double inner = std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v);
        return 0.5 * v * (1.0 + std::tanh(inner));
      });
    }
    return mapUnary(inputs, outputs, n,
                    [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); });
  case ir::OpKind::Affine: {
    const double scale = node.attrs().getFloat("scale");
    const double shift = node.attrs().getFloat("shift");
    // A zero shift is none: a product keeps the sign of a zero (see ir/ops/elementwise.cpp).
    return mapUnary(inputs, outputs, n,
                    [=](double v) { return shift == 0.0 ? scale * v : scale * v + shift; });
  }
  default: POPSIM_ASSERT(false, node.name(), " is not a unary elementwise op.");
  }
}

// Computed in float, like PyTorch's own float kernels, so results match bit for bit.
void binaryElementwise(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  switch (node.kind()) {
  case ir::OpKind::Add:
    return mapBinary(node, inputs, outputs, [](float a, float b) { return a + b; });
  case ir::OpKind::Sub:
    return mapBinary(node, inputs, outputs, [](float a, float b) { return a - b; });
  case ir::OpKind::Mul:
    return mapBinary(node, inputs, outputs, [](float a, float b) { return a * b; });
  case ir::OpKind::Div:
    return mapBinary(node, inputs, outputs, [](float a, float b) { return a / b; });
  default: POPSIM_ASSERT(false, node.name(), " is not a binary elementwise op.");
  }
}

} // namespace popsim::kernels::reference
