#pragma once

#include "kernels/cpu_isa.h"

#include <cstddef>
#include <cstdint>
#include <optional>

// The formulas of the elementwise tables (ir/pointwise_formulas.h,
// ir/binary_formulas.h) over vectors of doubles with SLEEF's vector maths,
// the library ATen's vectorised kernels use: the same formulas and double
// precision as the reference tables, several elements per instruction.
// Each instruction set has its own translation unit, built with its
// compiler flags (loops_avx2.cpp, loops_avx512.cpp). Without AVX2 there are
// none: SLEEF's SSE2 functions are slower than libm's one element at a
// time, so the reference loops run.
namespace popsim::kernels::vector {

struct ElementwiseLoops {
  // y = f(x) for the pointwise function at `index` (ir::PointwiseFunction::index).
  void (*pointwiseValues)(size_t index, const double* params, const float* x, float* y,
                          int64_t count);
  // dx = dy * f'(x), for pointwise functions with a derivative.
  void (*pointwiseGradients)(size_t index, const double* params, const float* dy, const float* x,
                             float* dx, int64_t count);
  // y = f(a, b) for the binary function whose formula is at `formula`
  // (ir::BinaryFunction::formula), over operands read with steps sa and sb
  // (0: one value for the whole piece, as broadcasting gives).
  void (*binaryValues)(size_t formula, const float* a, int64_t sa, const float* b, int64_t sb,
                       float* y, int64_t count);
  // dx = dy * df/d(operand)(a, b), 0 where the derivative is (masking NaN dy).
  void (*binaryGradients)(size_t formula, int64_t operand, const float* dy, int64_t sdy,
                          const float* a, int64_t sa, const float* b, int64_t sb, float* dx,
                          int64_t count);
  // y = 1 / (1 + exp(-x)) (sigmoid) or x / (1 + exp(-x)) (silu) in float, as
  // ATen's kernels compute them, with exp(-x) rounded to float from double.
  void (*logistic)(const float* x, float* y, int64_t count, bool silu);
  // The sum over k of exp(x[k] - shift), in double (log_softmax's row sum).
  double (*sumOfExp)(const float* x, double shift, int64_t count);
  // dx = dy - exp(y) * sum, in double rounded to float (log_softmax's
  // gradient along one row, sum being the row's sum of dy).
  void (*logSoftmaxGradients)(const float* dy, const float* y, double sum, float* dx,
                              int64_t count);
  // out[s] = logSumExp3(a[s], b[s], c[s]) + add[s] in double
  // (reference/log_sum_exp.h): a step of ctc_loss's recursions.
  void (*ctcLogSumExpRows)(const double* a, const double* b, const double* c, const double* add,
                           double* out, int64_t count);
  // dlp[k] = (exp(lp[k]) - exp(posterior[k] + nll - lp[k])) * grad, in
  // double rounded to float: ctc_loss's gradient along one frame.
  void (*ctcGradients)(const float* lp, const double* posterior, double nll, double grad,
                       float* dlp, int64_t count);
  const char* isa; // what implementation names report
};

// The loops built for `isa`, or nullopt for the baseline.
std::optional<ElementwiseLoops> elementwiseLoops(VectorIsa isa);

// One per translation unit; elementwiseLoops picks.
ElementwiseLoops elementwiseLoopsAvx2();
ElementwiseLoops elementwiseLoopsAvx512();

} // namespace popsim::kernels::vector
