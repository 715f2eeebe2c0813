// The elementwise loops on __m512d (SLEEF's avx512f functions); built with
// -mavx512f (kernels/CMakeLists.txt) and run only where vectorIsa() allows.
#define POPSIM_SLEEF_VECTOR __m512d
#define POPSIM_SLEEF_LANES 8
#define POPSIM_SLEEF_ISA avx512f
#define POPSIM_ISA_LOOPS elementwiseLoopsAvx512
#define POPSIM_ISA_NAME "avx512"
#include "kernels/vector/isa_loops.h"
