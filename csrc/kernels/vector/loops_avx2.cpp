// The elementwise loops on __m256d (SLEEF's avx2 functions); built with
// -mavx2 -mfma (kernels/CMakeLists.txt) and run only where vectorIsa() allows it.
// Everything instantiated here is in the anonymous namespace, so no inline
// code built for this instruction set is shared with the rest of popsim.
#include "ir/binary_formulas.h"
#include "ir/pointwise_formulas.h"
#include "kernels/vector/elementwise_loops.h"

#include <sleef.h>

namespace popsim::kernels::vector {
namespace {

#define POPSIM_SLEEF_VECTOR __m256d
#define POPSIM_SLEEF_LANES 4
#define POPSIM_SLEEF_ISA avx2
#include "kernels/vector/sleef_math.h"
// (after the maths, whose types it uses)
#include "kernels/vector/loop_bodies.h"

} // namespace

ElementwiseLoops elementwiseLoopsAvx2() {
  return {pointwiseValues, pointwiseGradients, binaryValues, binaryGradients, "avx2"};
}

} // namespace popsim::kernels::vector
