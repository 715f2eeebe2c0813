#pragma once

// The translation unit of one instruction set's elementwise loops: the
// including file (loops_avx2.cpp, loops_avx512.cpp) is built with that
// set's compiler flags and defines POPSIM_SLEEF_VECTOR, POPSIM_SLEEF_LANES,
// POPSIM_SLEEF_ISA (sleef_math.h) and POPSIM_ISA_LOOPS, the function that
// returns the loops, and POPSIM_ISA_NAME. Everything
// instantiated here is in the anonymous namespace, so no inline code built for this instruction set
// is shared with the rest of popsim.

#include "ir/binary_formulas.h"
#include "ir/pointwise_formulas.h"
#include "kernels/reference/log_sum_exp.h"
#include "kernels/vector/elementwise_loops.h"

#include <sleef.h>

namespace popsim::kernels::vector {
namespace {

#include "kernels/vector/sleef_math.h"
// (after the maths, whose types it uses)
#include "kernels/vector/loop_bodies.h"

} // namespace

ElementwiseLoops POPSIM_ISA_LOOPS() {
  return {pointwiseValues, pointwiseGradients,  binaryValues,     binaryGradients, logistic,
          sumOfExp,        logSoftmaxGradients, ctcLogSumExpRows, ctcGradients,    POPSIM_ISA_NAME};
}

} // namespace popsim::kernels::vector
