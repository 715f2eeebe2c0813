#pragma once

#include <cstddef>

// Where each hyper-parameter sits in the f64 vector an optimizer update op
// reads (double, as Python hands them to PyTorch's optimizers). The vectors are device state
// written by the host, so changing a hyper-parameter (setOptimizer) needs no recompilation.
// grad_scale turns the accumulated gradient into the one the step uses (1 / micro-batches for Mean
// accumulation, 1 for Sum).
namespace popsim::ir::hyper {

enum Sgd : size_t { SgdLr, SgdMomentum, SgdDampening, SgdWeightDecay, SgdGradScale, SgdCount };

enum Adam : size_t {
  AdamLr,
  AdamBeta1,
  AdamBeta2,
  AdamEps,
  AdamWeightDecay,
  AdamGradScale,
  AdamCount
};

enum Rmsprop : size_t {
  RmspropLr,
  RmspropAlpha,
  RmspropEps,
  RmspropWeightDecay,
  RmspropMomentum,
  RmspropGradScale,
  RmspropCount
};

// LAMB (PopTorch's): max_weight_norm caps the weight norm of the trust ratio.
enum Lamb : size_t {
  LambLr,
  LambBeta1,
  LambBeta2,
  LambEps,
  LambWeightDecay,
  LambMaxWeightNorm,
  LambGradScale,
  LambCount
};

} // namespace popsim::ir::hyper
