#include "kernels/reference/families.h"
#include "kernels/reference/indexing.h"

#include <algorithm>
#include <cmath>

namespace popsim::kernels::reference {

namespace {

// softmax: dX = Y * (dY - sum(dY * Y)); log_softmax: dX = dY - exp(Y) * sum(dY).
void softmaxGrad(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* dy = static_cast<const float*>(inputs[0]);
  const auto* y = static_cast<const float*>(inputs[1]);
  auto* dx = static_cast<float*>(outputs[0]);
  const bool log = node.kind() == ir::OpKind::LogSoftmaxGrad;
  const AxisSplit split = splitAroundAxis(node.input(0)->type().shape, node.attrs().getInt("dim"));
  for (int64_t o = 0; o < split.outer; ++o) {
    for (int64_t i = 0; i < split.inner; ++i) {
      const int64_t base = o * split.size * split.inner + i;
      auto at = [&](int64_t k) { return base + k * split.inner; };
      double sum = 0.0;
      for (int64_t k = 0; k < split.size; ++k) {
        sum += log ? static_cast<double>(dy[at(k)]) : static_cast<double>(dy[at(k)]) * y[at(k)];
      }
      for (int64_t k = 0; k < split.size; ++k) {
        dx[at(k)] =
            static_cast<float>(log ? dy[at(k)] - std::exp(static_cast<double>(y[at(k)])) * sum
                                   : y[at(k)] * (dy[at(k)] - sum));
      }
    }
  }
}

} // namespace

// softmax(x) = exp(x - max) / sum(exp(x - max)); log_softmax = x - max - log(sum).
void softmax(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  if (node.kind() == ir::OpKind::SoftmaxGrad || node.kind() == ir::OpKind::LogSoftmaxGrad) {
    return softmaxGrad(node, inputs, outputs);
  }
  const auto* x = static_cast<const float*>(inputs[0]);
  auto* y = static_cast<float*>(outputs[0]);
  const bool log = node.kind() == ir::OpKind::LogSoftmax;
  const AxisSplit split = splitAroundAxis(node.input(0)->type().shape, node.attrs().getInt("dim"));
  for (int64_t o = 0; o < split.outer; ++o) {
    for (int64_t i = 0; i < split.inner; ++i) {
      const int64_t base = o * split.size * split.inner + i;
      auto at = [&](int64_t k) { return base + k * split.inner; };
      double maxValue = x[at(0)];
      for (int64_t k = 1; k < split.size; ++k) {
        maxValue = std::max(maxValue, static_cast<double>(x[at(k)]));
      }
      double sum = 0.0;
      for (int64_t k = 0; k < split.size; ++k) {
        sum += std::exp(x[at(k)] - maxValue);
      }
      const double logSum = log ? std::log(sum) : 0.0;
      for (int64_t k = 0; k < split.size; ++k) {
        const double shifted = x[at(k)] - maxValue;
        y[at(k)] = static_cast<float>(log ? shifted - logSum : std::exp(shifted) / sum);
      }
    }
  }
}

} // namespace popsim::kernels::reference
