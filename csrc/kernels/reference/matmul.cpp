#include "kernels/reference/families.h"
#include "kernels/reference/indexing.h"

namespace popsim::kernels::reference {
namespace {

void linear(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* x = static_cast<const float*>(inputs[0]);
  const auto* w = static_cast<const float*>(inputs[1]);
  const auto* bias = inputs.size() > 2 ? static_cast<const float*>(inputs[2]) : nullptr;
  auto* y = static_cast<float*>(outputs[0]);
  const int64_t K = node.input(1)->type().shape[1];
  const int64_t N = node.input(1)->type().shape[0];
  const int64_t M = node.input(0)->type().numel() / K;
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      double sum = bias != nullptr ? bias[n] : 0.0;
      for (int64_t k = 0; k < K; ++k) {
        sum += static_cast<double>(x[m * K + k]) * w[n * K + k];
      }
      y[m * N + n] = static_cast<float>(sum);
    }
  }
}

// Batched matmul with broadcast batch dimensions.
void batchedMatmul(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* a = static_cast<const float*>(inputs[0]);
  const auto* b = static_cast<const float*>(inputs[1]);
  auto* y = static_cast<float*>(outputs[0]);
  const ir::Shape& as = node.input(0)->type().shape;
  const ir::Shape& bs = node.input(1)->type().shape;
  const ir::Shape& ys = node.output()->type().shape;
  const int64_t M = ys[ys.size() - 2], N = ys.back(), K = as.back();
  const ir::Shape batch(ys.begin(), ys.end() - 2);
  const ir::Shape batchA(as.begin(), as.end() - 2);
  const ir::Shape batchB(bs.begin(), bs.end() - 2);
  const auto stridesA = broadcastStrides(batchA, batch);
  const auto stridesB = broadcastStrides(batchB, batch);
  int64_t batchIndex = 0;
  forEachIndex(batch, [&](const std::vector<int64_t>& index) {
    const float* pa = a + dot(index, stridesA) * M * K;
    const float* pb = b + dot(index, stridesB) * K * N;
    float* py = y + batchIndex++ * M * N;
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t n = 0; n < N; ++n) {
        double sum = 0.0;
        for (int64_t k = 0; k < K; ++k) {
          sum += static_cast<double>(pa[m * K + k]) * pb[k * N + n];
        }
        py[m * N + n] = static_cast<float>(sum);
      }
    }
  });
}

// dW[n, k] = sum over rows m of dY[m, n] * X[m, k].
void linearGradWeight(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* dy = static_cast<const float*>(inputs[0]);
  const auto* x = static_cast<const float*>(inputs[1]);
  auto* dw = static_cast<float*>(outputs[0]);
  const int64_t N = node.output()->type().shape[0];
  const int64_t K = node.output()->type().shape[1];
  const int64_t M = node.input(0)->type().numel() / N;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t k = 0; k < K; ++k) {
      double sum = 0.0;
      for (int64_t m = 0; m < M; ++m) {
        sum += static_cast<double>(dy[m * N + n]) * x[m * K + k];
      }
      dw[n * K + k] = static_cast<float>(sum);
    }
  }
}

} // namespace

void matmul(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  switch (node.kind()) {
  case ir::OpKind::Linear: return linear(node, inputs, outputs);
  case ir::OpKind::LinearGradWeight: return linearGradWeight(node, inputs, outputs);
  default: return batchedMatmul(node, inputs, outputs);
  }
}

} // namespace popsim::kernels::reference
