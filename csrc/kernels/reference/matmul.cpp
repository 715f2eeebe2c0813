#include "kernels/reference/families.h"

#include "kernels/half_rounding.h"
#include "kernels/reference/half_partials_product.h"
#include "kernels/reference/indexing.h"
#include "kernels/reference/partial_sums.h"

#include <algorithm>
#include <vector>

namespace popsim::kernels::reference {
namespace {

// The float32 forms, summing in double (FloatSum) as PyTorch's CPU kernels'
// precision does; the float16-partials forms below keep their order.

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
      FloatSum sum(bias != nullptr ? bias[n] : 0.0);
      for (int64_t k = 0; k < K; ++k) {
        sum.add(static_cast<double>(x[m * K + k]) * w[n * K + k]);
      }
      y[m * N + n] = sum.result();
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
        FloatSum sum;
        for (int64_t k = 0; k < K; ++k) {
          sum.add(static_cast<double>(pa[m * K + k]) * pb[k * N + n]);
        }
        py[m * N + n] = sum.result();
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
      FloatSum sum;
      for (int64_t m = 0; m < M; ++m) {
        sum.add(static_cast<double>(dy[m * N + n]) * x[m * K + k]);
      }
      dw[n * K + k] = sum.result();
    }
  }
}

// The float16-partials forms, as matrix products (halfPartialsProduct):
// each output's products in the same order as the loops above, so the same
// results.

// y[m, :] = sum over k of x[m, k] * w[:, k] (w read as its transpose), then
// the bias, added once the products are summed, as the IPU adds it in an op
// of its own.
void linearHalf(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* x = static_cast<const float*>(inputs[0]);
  const auto* w = static_cast<const float*>(inputs[1]);
  const auto* bias = inputs.size() > 2 ? static_cast<const float*>(inputs[2]) : nullptr;
  auto* y = static_cast<float*>(outputs[0]);
  const int64_t K = node.input(1)->type().shape[1];
  const int64_t N = node.input(1)->type().shape[0];
  const int64_t M = node.input(0)->type().numel() / K;
  halfPartialsProduct(M, N, K, MatrixView{x, K}, MatrixView{w, 1, K}, OutputView{y, N});
  if (bias == nullptr) return;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n)
      y[m * N + n] += bias[n];
  roundToHalf(y, static_cast<size_t>(M * N));
}

void batchedMatmulHalf(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* a = static_cast<const float*>(inputs[0]);
  const auto* b = static_cast<const float*>(inputs[1]);
  auto* y = static_cast<float*>(outputs[0]);
  const ir::Shape& as = node.input(0)->type().shape;
  const ir::Shape& bs = node.input(1)->type().shape;
  const ir::Shape& ys = node.output()->type().shape;
  const int64_t M = ys[ys.size() - 2], N = ys.back(), K = as.back();
  const ir::Shape batch(ys.begin(), ys.end() - 2);
  const auto stridesA = broadcastStrides(ir::Shape(as.begin(), as.end() - 2), batch);
  const auto stridesB = broadcastStrides(ir::Shape(bs.begin(), bs.end() - 2), batch);
  int64_t batchIndex = 0;
  forEachIndex(batch, [&](const std::vector<int64_t>& index) {
    const float* pa = a + dot(index, stridesA) * M * K;
    const float* pb = b + dot(index, stridesB) * K * N;
    halfPartialsProduct(M, N, K, pa, K, pb, N, y + batchIndex++ * M * N, N);
  });
}

// dW[n, :] = sum over rows m of dY[m, n] * X[m, :] (dY read as its transpose).
void linearGradWeightHalf(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  const auto* dy = static_cast<const float*>(inputs[0]);
  const auto* x = static_cast<const float*>(inputs[1]);
  auto* dw = static_cast<float*>(outputs[0]);
  const int64_t N = node.output()->type().shape[0];
  const int64_t K = node.output()->type().shape[1];
  const int64_t M = node.input(0)->type().numel() / N;
  halfPartialsProduct(N, K, M, MatrixView{dy, 1, N}, MatrixView{x, K}, OutputView{dw, K});
}

} // namespace

void matmul(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  switch (node.kind()) {
  case ir::OpKind::Linear: return linear(node, inputs, outputs);
  case ir::OpKind::LinearGradWeight: return linearGradWeight(node, inputs, outputs);
  default: return batchedMatmul(node, inputs, outputs);
  }
}

void matmulWithHalfPartials(const ir::Node& node, const Inputs& inputs, const Outputs& outputs) {
  switch (node.kind()) {
  case ir::OpKind::Linear: return linearHalf(node, inputs, outputs);
  case ir::OpKind::LinearGradWeight: return linearGradWeightHalf(node, inputs, outputs);
  default: return batchedMatmulHalf(node, inputs, outputs);
  }
}

} // namespace popsim::kernels::reference
