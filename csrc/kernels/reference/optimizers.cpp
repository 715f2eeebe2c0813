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
#include "kernels/reference/elementwise_optimizers.h"
#include "kernels/reference/families.h"
#include "kernels/reference/fma_clones.h"
#include "kernels/reference/lamb.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace popsim::kernels::reference {
namespace {

using namespace ir::hyper;

// The step's operands, and the elements [begin, end) it updates: all of them,
// or a block when float16 rounding follows each block (elementwise_optimizers.h).
struct Tensors {
  float* param;
  const float* grad;
  const double* hyper;
  int64_t begin;
  int64_t end;
};

Tensors tensorsOf(const Inputs& inputs, int64_t begin, int64_t end) {
  return {static_cast<float*>(inputs[0]), static_cast<const float*>(inputs[1]),
          static_cast<const double*>(inputs[2]), begin, end};
}

int64_t elementsOf(const ir::Node& node) { return node.input(0)->type().numel(); }

float f(double value) { return static_cast<float>(value); }

// grad * scale is grad exactly when scale is 1; the select on `maximize`
// keeps the loops free of branches, so that they vectorise.
float gradientAt(const Tensors& t, int64_t i, float scale, bool maximize) {
  const float g = t.grad[i] * scale;
  return maximize ? -g : g;
}

// The loops below take the choices that add or skip operations (weight
// decay, momentum, amsgrad, centring) as template arguments and the others
// as selects: with no branch left in them, GCC vectorises them (with
// -fno-math-errno, sqrt is one instruction). They are inlined into the
// POPSIM_FMA_CLONES functions, so each clone gets its own copy.
#define POPSIM_INLINE_LOOP __attribute__((always_inline)) inline

// d_p = grad (+ weight_decay * p); with momentum: buf = d_p on the first
// step, else buf = momentum * buf + (1 - dampening) * d_p; nesterov uses
// d_p + momentum * buf; then p -= lr * d_p.
struct Sgd {
  float minusLr, momentum, keep, weightDecay, scale;
  bool firstStep, nesterov, maximize;
  float* buffer;
};

template <bool decay, bool hasMomentum>
POPSIM_INLINE_LOOP void sgdLoop(const Tensors& t, const Sgd& s) {
  for (int64_t i = t.begin; i < t.end; ++i) {
    float d = gradientAt(t, i, s.scale, s.maximize);
    if constexpr (decay) d = std::fma(t.param[i], s.weightDecay, d);
    if constexpr (hasMomentum) {
      const float buffer = s.firstStep ? d : std::fma(d, s.keep, s.buffer[i] * s.momentum);
      s.buffer[i] = buffer;
      d = s.nesterov ? std::fma(buffer, s.momentum, d) : buffer;
    }
    t.param[i] = std::fma(d, s.minusLr, t.param[i]);
  }
}

POPSIM_FMA_CLONES void sgd(const ir::Node& node, const Inputs& inputs, int64_t begin, int64_t end) {
  const Tensors t = tensorsOf(inputs, begin, end);
  const bool hasMomentum = inputs.size() == 5;
  const Sgd s{f(-t.hyper[SgdLr]),
              f(t.hyper[SgdMomentum]),
              f(1.0 - t.hyper[SgdDampening]),
              f(t.hyper[SgdWeightDecay]),
              f(t.hyper[SgdGradScale]),
              hasMomentum && *static_cast<const int64_t*>(inputs[4]) <= 1,
              node.attrs().getBool("nesterov"),
              node.attrs().getBool("maximize"),
              hasMomentum ? static_cast<float*>(inputs[3]) : nullptr};
  const bool decay = s.weightDecay != 0.0f;
  if (decay && hasMomentum) return sgdLoop<true, true>(t, s);
  if (decay) return sgdLoop<true, false>(t, s);
  if (hasMomentum) return sgdLoop<false, true>(t, s);
  sgdLoop<false, false>(t, s);
}

// Adam / AdamW (decoupled_weight_decay): moments m and v, bias corrections
// from the step count, p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps);
// without bias_correction (PopTorch's AdamW option) bc1 = bc2 = 1.
struct Adam {
  float minusStepSize, bc2Sqrt, decay, coupledDecay, b1, b2, oneMinusB1, oneMinusB2, eps, scale;
  bool maximize;
  float *expAvg, *expAvgSq, *maxExpAvgSq;
};

template <bool decoupled, bool coupled, bool amsgrad>
POPSIM_INLINE_LOOP void adamLoop(const Tensors& t, const Adam& s) {
  for (int64_t i = t.begin; i < t.end; ++i) {
    float g = gradientAt(t, i, s.scale, s.maximize);
    if constexpr (decoupled) t.param[i] = t.param[i] * s.decay;
    if constexpr (coupled) g = std::fma(t.param[i], s.coupledDecay, g);
    s.expAvg[i] = std::fma(g, s.oneMinusB1, s.expAvg[i] * s.b1);
    s.expAvgSq[i] = s.expAvgSq[i] * s.b2 + s.oneMinusB2 * g * g;
    float second = s.expAvgSq[i];
    if constexpr (amsgrad) {
      s.maxExpAvgSq[i] = std::max(s.maxExpAvgSq[i], s.expAvgSq[i]);
      second = s.maxExpAvgSq[i];
    }
    const float denom = std::sqrt(second) / s.bc2Sqrt + s.eps;
    t.param[i] = t.param[i] + s.minusStepSize * s.expAvg[i] / denom;
  }
}

POPSIM_FMA_CLONES void adam(const ir::Node& node, const Inputs& inputs, int64_t begin,
                            int64_t end) {
  const Tensors t = tensorsOf(inputs, begin, end);
  const int64_t step = *static_cast<const int64_t*>(inputs[3]);
  const bool amsgrad = node.attrs().getBool("amsgrad");
  const bool decoupled = node.attrs().getBool("decoupled_weight_decay");
  const double lr = t.hyper[AdamLr], beta1 = t.hyper[AdamBeta1], beta2 = t.hyper[AdamBeta2];
  const double weightDecay = t.hyper[AdamWeightDecay];
  const bool corrected = node.attrs().getBool("bias_correction");
  const double bc1 = corrected ? 1.0 - std::pow(beta1, static_cast<double>(step)) : 1.0;
  const double bc2 = corrected ? 1.0 - std::pow(beta2, static_cast<double>(step)) : 1.0;
  const Adam s{f(-(lr / bc1)),
               f(std::sqrt(bc2)),
               f(1.0 - lr * weightDecay),
               f(weightDecay),
               f(beta1),
               f(beta2),
               f(1.0 - beta1),
               f(1.0 - beta2),
               f(t.hyper[AdamEps]),
               f(t.hyper[AdamGradScale]),
               node.attrs().getBool("maximize"),
               static_cast<float*>(inputs[4]),
               static_cast<float*>(inputs[5]),
               amsgrad ? static_cast<float*>(inputs[6]) : nullptr};
  const bool coupled = !decoupled && weightDecay != 0.0;
  if (decoupled) {
    return amsgrad ? adamLoop<true, false, true>(t, s) : adamLoop<true, false, false>(t, s);
  }
  if (coupled) {
    return amsgrad ? adamLoop<false, true, true>(t, s) : adamLoop<false, true, false>(t, s);
  }
  amsgrad ? adamLoop<false, false, true>(t, s) : adamLoop<false, false, false>(t, s);
}

// RMSprop: square_avg = alpha * square_avg + (1 - alpha) * g^2 (centred:
// minus the squared running mean of g), then p -= lr * g / (sqrt(.) + eps),
// through a momentum buffer when momentum > 0. TensorFlow's variant
// (PopTorch's use_tf_variant, as PopART computes it): eps inside the square
// root, the momentum buffer accumulating lr * g / sqrt(.) (so p -= buffer),
// and square_avg starting at ones (the host's initial state).
struct Rmsprop {
  float minusLr, alpha, oneMinusAlpha, eps, weightDecay, momentum, scale;
  bool maximize;
  float *squareAvg, *gradAvg, *buffer;
};

template <bool decay, bool centered, bool hasMomentum, bool tf>
POPSIM_INLINE_LOOP void rmspropLoop(const Tensors& t, const Rmsprop& s) {
  for (int64_t i = t.begin; i < t.end; ++i) {
    float g = gradientAt(t, i, s.scale, s.maximize);
    if constexpr (decay) g = std::fma(t.param[i], s.weightDecay, g);
    s.squareAvg[i] = s.squareAvg[i] * s.alpha + s.oneMinusAlpha * g * g;
    float second = s.squareAvg[i];
    if constexpr (centered) {
      s.gradAvg[i] = std::fma(g, s.oneMinusAlpha, s.gradAvg[i] * s.alpha);
      second = s.squareAvg[i] + -1.0f * s.gradAvg[i] * s.gradAvg[i];
    }
    const float avg = tf ? std::sqrt(second + s.eps) : std::sqrt(second) + s.eps;
    if constexpr (hasMomentum && tf) {
      s.buffer[i] = s.buffer[i] * s.momentum + -s.minusLr * (g / avg);
      t.param[i] = t.param[i] - s.buffer[i];
    } else if constexpr (hasMomentum) {
      s.buffer[i] = s.buffer[i] * s.momentum + 1.0f * g / avg;
      t.param[i] = std::fma(s.buffer[i], s.minusLr, t.param[i]);
    } else {
      t.param[i] = t.param[i] + s.minusLr * g / avg;
    }
  }
}

POPSIM_FMA_CLONES void rmsprop(const ir::Node& node, const Inputs& inputs, int64_t begin,
                               int64_t end) {
  const Tensors t = tensorsOf(inputs, begin, end);
  const bool centered = node.attrs().getBool("centered");
  const bool hasMomentum = node.attrs().getBool("has_momentum");
  size_t next = 4;
  float* gradAvg = centered ? static_cast<float*>(inputs[next++]) : nullptr;
  float* buffer = hasMomentum ? static_cast<float*>(inputs[next++]) : nullptr;
  const Rmsprop s{f(-t.hyper[RmspropLr]),
                  f(t.hyper[RmspropAlpha]),
                  f(1.0 - t.hyper[RmspropAlpha]),
                  f(t.hyper[RmspropEps]),
                  f(t.hyper[RmspropWeightDecay]),
                  f(t.hyper[RmspropMomentum]),
                  f(t.hyper[RmspropGradScale]),
                  node.attrs().getBool("maximize"),
                  static_cast<float*>(inputs[3]),
                  gradAvg,
                  buffer};
  const int choice = (node.attrs().getBool("tf_variant") ? 8 : 0) +
                     (s.weightDecay != 0.0f ? 4 : 0) + (centered ? 2 : 0) + (hasMomentum ? 1 : 0);
  switch (choice) {
  case 0: return rmspropLoop<false, false, false, false>(t, s);
  case 1: return rmspropLoop<false, false, true, false>(t, s);
  case 2: return rmspropLoop<false, true, false, false>(t, s);
  case 3: return rmspropLoop<false, true, true, false>(t, s);
  case 4: return rmspropLoop<true, false, false, false>(t, s);
  case 5: return rmspropLoop<true, false, true, false>(t, s);
  case 6: return rmspropLoop<true, true, false, false>(t, s);
  case 7: return rmspropLoop<true, true, true, false>(t, s);
  case 8: return rmspropLoop<false, false, false, true>(t, s);
  case 9: return rmspropLoop<false, false, true, true>(t, s);
  case 10: return rmspropLoop<false, true, false, true>(t, s);
  case 11: return rmspropLoop<false, true, true, true>(t, s);
  case 12: return rmspropLoop<true, false, false, true>(t, s);
  case 13: return rmspropLoop<true, false, true, true>(t, s);
  case 14: return rmspropLoop<true, true, false, true>(t, s);
  default: return rmspropLoop<true, true, true, true>(t, s);
  }
}

// LAMB (PopTorch's optim.LAMB): Adam's moments, upd = m / bc1 / (sqrt(v) /
// sqrt(bc2) + eps) + weight_decay * p (bias corrections 1 without
// bias_correction), then p -= lr * trust * upd with trust = min(|p|,
// max_weight_norm) / |upd|, or 1 when |p| or |upd| is 0. The zero test reads
// the norm before the cap: a zero-initialised parameter still learns, while
// PopTorch's max_weight_norm=0 stops every update. The norms are summed in
// double; the update is kept for the second pass.
POPSIM_FMA_CLONES LambSquares direction(const ir::Node& node, const Inputs& inputs, float* update) {
  const Tensors t = tensorsOf(inputs, 0, elementsOf(node));
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
  LambSquares squares;
  for (int64_t i = t.begin; i < t.end; ++i) {
    const float g = gradientAt(t, i, scale, false);
    expAvg[i] = std::fma(g, oneMinusB1, expAvg[i] * b1);
    expAvgSq[i] = expAvgSq[i] * b2 + oneMinusB2 * g * g;
    const float denom = std::sqrt(expAvgSq[i]) / bc2Sqrt + eps;
    const float u = expAvg[i] / bc1f / denom + weightDecay * t.param[i];
    update[i] = u;
    squares.weight += static_cast<double>(t.param[i]) * t.param[i];
    squares.update += static_cast<double>(u) * u;
  }
  return squares;
}

POPSIM_FMA_CLONES void apply(const ir::Node& node, const Inputs& inputs, const float* update,
                             LambSquares squares) {
  const Tensors t = tensorsOf(inputs, 0, elementsOf(node));
  const float weightNorm = f(std::sqrt(squares.weight));
  const float updateNorm = f(std::sqrt(squares.update));
  const float trust = weightNorm == 0.0f || updateNorm == 0.0f
                          ? 1.0f
                          : std::min(weightNorm, f(t.hyper[LambMaxWeightNorm])) / updateNorm;
  const float minusStep = f(-t.hyper[LambLr]) * trust;
  for (int64_t i = t.begin; i < t.end; ++i) {
    t.param[i] = std::fma(update[i], minusStep, t.param[i]);
  }
}

void lamb(const ir::Node& node, const Inputs& inputs) {
  std::vector<float> update(static_cast<size_t>(node.input(0)->type().numel()));
  apply(node, inputs, update.data(), direction(node, inputs, update.data()));
}

} // namespace

LambSquares lambDirection(const ir::Node& node, const Inputs& inputs, float* update) {
  return direction(node, inputs, update);
}

void lambApply(const ir::Node& node, const Inputs& inputs, const float* update,
               LambSquares squares) {
  apply(node, inputs, update, squares);
}

bool updatesEachElementAlone(ir::OpKind kind) {
  return kind == ir::OpKind::SgdUpdate || kind == ir::OpKind::AdamUpdate ||
         kind == ir::OpKind::RmspropUpdate;
}

void optimizerStepOver(const ir::Node& node, const Inputs& inputs, int64_t begin, int64_t end) {
  switch (node.kind()) {
  case ir::OpKind::SgdUpdate: return sgd(node, inputs, begin, end);
  case ir::OpKind::AdamUpdate: return adam(node, inputs, begin, end);
  case ir::OpKind::RmspropUpdate: return rmsprop(node, inputs, begin, end);
  default: POPSIM_ASSERT(false, node.name(), " does not update each element on its own.");
  }
}

void optimizer(const ir::Node& node, const Inputs& inputs, const Outputs&) {
  if (node.kind() == ir::OpKind::LambUpdate) return lamb(node, inputs);
  optimizerStepOver(node, inputs, 0, elementsOf(node));
}

} // namespace popsim::kernels::reference
