// Fused optimizer steps, one parameter at a time. Each follows PyTorch 1.13's
// single-tensor implementation (torch/optim/{sgd,adam,adamw,rmsprop}.py; for
// LAMB, popsim.optim.LAMB's step)
// operation by operation, so that trained weights match eager PyTorch:
// - hyper-parameters arrive as doubles, scalars derived from them (1 - beta,
//   bias corrections) are computed in double as Python does, then cast to
//   float as ATen casts a Scalar for a float tensor;
// - tensor.add_(other, alpha=a) is fma(other, a, tensor), as ATen's
//   vectorised add is; addcmul / addcdiv keep ATen's operand order.
// The gradient is read through grad_scale, which averages accumulated
// micro-batch gradients.

#include "common/check.h"
#include "ir/optimizer_hyperparameters.h"
#include "kernels/reference/families.h"
#include "kernels/reference/fma_clones.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace popsim::kernels::reference {
namespace {

using namespace ir::hyper;

struct Tensors {
  float* param;
  const float* grad;
  const double* hyper;
  int64_t count;
};

Tensors tensorsOf(const ir::Node& node, const Inputs& inputs) {
  return {static_cast<float*>(inputs[0]), static_cast<const float*>(inputs[1]),
          static_cast<const double*>(inputs[2]), node.input(0)->type().numel()};
}

float f(double value) { return static_cast<float>(value); }

float gradientAt(const Tensors& t, int64_t i, float scale, bool maximize) {
  const float g = scale == 1.0f ? t.grad[i] : t.grad[i] * scale;
  return maximize ? -g : g;
}

// d_p = grad (+ weight_decay * p); with momentum: buf = d_p on the first
// step, else buf = momentum * buf + (1 - dampening) * d_p; nesterov uses
// d_p + momentum * buf; then p -= lr * d_p.
POPSIM_FMA_CLONES void sgd(const ir::Node& node, const Inputs& inputs) {
  const Tensors t = tensorsOf(node, inputs);
  const bool hasMomentum = inputs.size() == 5;
  float* buffer = hasMomentum ? static_cast<float*>(inputs[3]) : nullptr;
  const bool firstStep = hasMomentum && *static_cast<const int64_t*>(inputs[4]) <= 1;
  const float minusLr = f(-t.hyper[SgdLr]), momentum = f(t.hyper[SgdMomentum]);
  const float keep = f(1.0 - t.hyper[SgdDampening]);
  const float weightDecay = f(t.hyper[SgdWeightDecay]), scale = f(t.hyper[SgdGradScale]);
  const bool nesterov = node.attrs().getBool("nesterov");
  const bool maximize = node.attrs().getBool("maximize");
  for (int64_t i = 0; i < t.count; ++i) {
    float d = gradientAt(t, i, scale, maximize);
    if (weightDecay != 0.0f) d = std::fma(t.param[i], weightDecay, d);
    if (hasMomentum) {
      buffer[i] = firstStep ? d : std::fma(d, keep, buffer[i] * momentum);
      d = nesterov ? std::fma(buffer[i], momentum, d) : buffer[i];
    }
    t.param[i] = std::fma(d, minusLr, t.param[i]);
  }
}

// Adam / AdamW (decoupled_weight_decay): moments m and v, bias corrections
// from the step count, p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps).
POPSIM_FMA_CLONES void adam(const ir::Node& node, const Inputs& inputs) {
  const Tensors t = tensorsOf(node, inputs);
  const int64_t step = *static_cast<const int64_t*>(inputs[3]);
  auto* expAvg = static_cast<float*>(inputs[4]);
  auto* expAvgSq = static_cast<float*>(inputs[5]);
  const bool amsgrad = node.attrs().getBool("amsgrad");
  float* maxExpAvgSq = amsgrad ? static_cast<float*>(inputs[6]) : nullptr;
  const bool maximize = node.attrs().getBool("maximize");
  const bool decoupled = node.attrs().getBool("decoupled_weight_decay");
  const double lr = t.hyper[AdamLr], beta1 = t.hyper[AdamBeta1], beta2 = t.hyper[AdamBeta2];
  const double weightDecay = t.hyper[AdamWeightDecay];
  const double bc1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  const float minusStepSize = f(-(lr / bc1)), bc2Sqrt = f(std::sqrt(bc2));
  const float decay = f(1.0 - lr * weightDecay), coupledDecay = f(weightDecay);
  const float b1 = f(beta1), b2 = f(beta2), oneMinusB1 = f(1.0 - beta1),
              oneMinusB2 = f(1.0 - beta2);
  const float eps = f(t.hyper[AdamEps]), scale = f(t.hyper[AdamGradScale]);
  for (int64_t i = 0; i < t.count; ++i) {
    float g = gradientAt(t, i, scale, maximize);
    if (decoupled) {
      t.param[i] = t.param[i] * decay;
    } else if (weightDecay != 0.0) {
      g = std::fma(t.param[i], coupledDecay, g);
    }
    expAvg[i] = std::fma(g, oneMinusB1, expAvg[i] * b1);
    expAvgSq[i] = expAvgSq[i] * b2 + oneMinusB2 * g * g;
    float second = expAvgSq[i];
    if (amsgrad) {
      maxExpAvgSq[i] = std::max(maxExpAvgSq[i], expAvgSq[i]);
      second = maxExpAvgSq[i];
    }
    const float denom = std::sqrt(second) / bc2Sqrt + eps;
    t.param[i] = t.param[i] + minusStepSize * expAvg[i] / denom;
  }
}

// RMSprop: square_avg = alpha * square_avg + (1 - alpha) * g^2 (centred:
// minus the squared running mean of g), then p -= lr * g / (sqrt(.) + eps),
// through a momentum buffer when momentum > 0.
POPSIM_FMA_CLONES void rmsprop(const ir::Node& node, const Inputs& inputs) {
  const Tensors t = tensorsOf(node, inputs);
  const bool centered = node.attrs().getBool("centered");
  const bool hasMomentum = node.attrs().getBool("has_momentum");
  const bool maximize = node.attrs().getBool("maximize");
  auto* squareAvg = static_cast<float*>(inputs[3]);
  size_t next = 4;
  float* gradAvg = centered ? static_cast<float*>(inputs[next++]) : nullptr;
  float* buffer = hasMomentum ? static_cast<float*>(inputs[next++]) : nullptr;
  const float minusLr = f(-t.hyper[RmspropLr]), alpha = f(t.hyper[RmspropAlpha]);
  const float oneMinusAlpha = f(1.0 - t.hyper[RmspropAlpha]), eps = f(t.hyper[RmspropEps]);
  const float weightDecay = f(t.hyper[RmspropWeightDecay]), momentum = f(t.hyper[RmspropMomentum]);
  const float scale = f(t.hyper[RmspropGradScale]);
  for (int64_t i = 0; i < t.count; ++i) {
    float g = gradientAt(t, i, scale, maximize);
    if (weightDecay != 0.0f) g = std::fma(t.param[i], weightDecay, g);
    squareAvg[i] = squareAvg[i] * alpha + oneMinusAlpha * g * g;
    float avg;
    if (centered) {
      gradAvg[i] = std::fma(g, oneMinusAlpha, gradAvg[i] * alpha);
      avg = std::sqrt(squareAvg[i] + -1.0f * gradAvg[i] * gradAvg[i]);
    } else {
      avg = std::sqrt(squareAvg[i]);
    }
    avg = avg + eps;
    if (hasMomentum) {
      buffer[i] = buffer[i] * momentum + 1.0f * g / avg;
      t.param[i] = std::fma(buffer[i], minusLr, t.param[i]);
    } else {
      t.param[i] = t.param[i] + minusLr * g / avg;
    }
  }
}

// LAMB (PopTorch's optim.LAMB): Adam's moments, upd = m / bc1 / (sqrt(v) /
// sqrt(bc2) + eps) + weight_decay * p (bias corrections 1 without
// bias_correction), then p -= lr * trust * upd with trust = min(|p|,
// max_weight_norm) / |upd|, or 1 when either norm is 0. The norms are
// summed in double; the update is kept for the second pass.
POPSIM_FMA_CLONES void lamb(const ir::Node& node, const Inputs& inputs) {
  const Tensors t = tensorsOf(node, inputs);
  const int64_t step = *static_cast<const int64_t*>(inputs[3]);
  auto* expAvg = static_cast<float*>(inputs[4]);
  auto* expAvgSq = static_cast<float*>(inputs[5]);
  const double beta1 = t.hyper[LambBeta1], beta2 = t.hyper[LambBeta2];
  const bool corrected = node.attrs().getBool("bias_correction");
  const double bc1 = corrected ? 1.0 - std::pow(beta1, static_cast<double>(step)) : 1.0;
  const double bc2 = corrected ? 1.0 - std::pow(beta2, static_cast<double>(step)) : 1.0;
  const float b1 = f(beta1), b2 = f(beta2), oneMinusB1 = f(1.0 - beta1),
              oneMinusB2 = f(1.0 - beta2);
  const float bc1f = f(bc1), bc2Sqrt = f(std::sqrt(bc2)), eps = f(t.hyper[LambEps]);
  const float weightDecay = f(t.hyper[LambWeightDecay]), scale = f(t.hyper[LambGradScale]);
  std::vector<float> update(static_cast<size_t>(t.count));
  double weightSquares = 0.0;
  double updateSquares = 0.0;
  for (int64_t i = 0; i < t.count; ++i) {
    const float g = gradientAt(t, i, scale, false);
    expAvg[i] = std::fma(g, oneMinusB1, expAvg[i] * b1);
    expAvgSq[i] = expAvgSq[i] * b2 + oneMinusB2 * g * g;
    const float denom = std::sqrt(expAvgSq[i]) / bc2Sqrt + eps;
    const float u = expAvg[i] / bc1f / denom + weightDecay * t.param[i];
    update[static_cast<size_t>(i)] = u;
    weightSquares += static_cast<double>(t.param[i]) * t.param[i];
    updateSquares += static_cast<double>(u) * u;
  }
  const float weightNorm = std::min(f(std::sqrt(weightSquares)), f(t.hyper[LambMaxWeightNorm]));
  const float updateNorm = f(std::sqrt(updateSquares));
  const float trust = weightNorm == 0.0f || updateNorm == 0.0f ? 1.0f : weightNorm / updateNorm;
  const float minusStep = f(-t.hyper[LambLr]) * trust;
  for (int64_t i = 0; i < t.count; ++i) {
    t.param[i] = std::fma(update[static_cast<size_t>(i)], minusStep, t.param[i]);
  }
}

} // namespace

void optimizer(const ir::Node& node, const Inputs& inputs, const Outputs&) {
  switch (node.kind()) {
  case ir::OpKind::SgdUpdate: return sgd(node, inputs);
  case ir::OpKind::AdamUpdate: return adam(node, inputs);
  case ir::OpKind::RmspropUpdate: return rmsprop(node, inputs);
  case ir::OpKind::LambUpdate: return lamb(node, inputs);
  default: POPSIM_ASSERT(false, node.name(), " is not an optimizer op.");
  }
}

} // namespace popsim::kernels::reference
