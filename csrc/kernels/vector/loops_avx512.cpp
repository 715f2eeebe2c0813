// The elementwise loops on __m512d (SLEEF's avx512f functions); built with
// -mavx512f (kernels/CMakeLists.txt) and run only where vectorIsa() allows it.
// Everything instantiated here is in the anonymous namespace, so no inline
// code built for this instruction set is shared with the rest of popsim.
#include "ir/binary_formulas.h"
#include "ir/pointwise_formulas.h"
#include "kernels/vector/elementwise_loops.h"

#include <sleef.h>

namespace popsim::kernels::vector {
namespace {

#define POPSIM_SLEEF_VECTOR __m512d
#define POPSIM_SLEEF_LANES 8
#define POPSIM_SLEEF_ISA avx512f
#include "kernels/vector/sleef_math.h"
// (after the maths, whose types it uses)
#include "kernels/vector/loop_bodies.h"

} // namespace

ElementwiseLoops elementwiseLoopsAvx512() {
  return {pointwiseValues, pointwiseGradients, binaryValues, binaryGradients, "avx512"};
}

} // namespace popsim::kernels::vector
