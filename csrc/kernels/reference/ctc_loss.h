#pragma once

#include "kernels/reference/families.h"

#include <cstdint>

namespace popsim::kernels::reference {

// The per-element maths of ctc_loss and its gradient, over arrays: libm one
// element at a time in the reference kernel, SLEEF's vectors in the
// vectorised one (kernels/ctc_loss_kernel.h).
struct CtcMaths {
  // out[s] = logSumExp3(a[s], b[s], c[s]) + add[s] (log_sum_exp.h).
  void (*logSumExpRows)(const double* a, const double* b, const double* c, const double* add,
                        double* out, int64_t count);
  // dlp[k] = (exp(lp[k]) - exp(posterior[k] + nll - lp[k])) * grad, in double
  // rounded to float.
  void (*gradients)(const float* lp, const double* posterior, double nll, double grad, float* dlp,
                    int64_t count);
};

// libm's, one element at a time.
CtcMaths scalarCtcMaths();

// ctc_loss or ctc_loss_grad with `maths`, the samples on the IPU's threads
// when `parallel`.
void ctcWith(const ir::Node& node, const Inputs& inputs, const Outputs& outputs,
             const CtcMaths& maths, bool parallel);

} // namespace popsim::kernels::reference
