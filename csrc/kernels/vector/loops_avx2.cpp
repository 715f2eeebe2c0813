// The elementwise loops on __m256d (SLEEF's avx2 functions); built with
// -mavx2 -mfma (kernels/CMakeLists.txt) and run only where vectorIsa() allows.
#define POPSIM_SLEEF_VECTOR __m256d
#define POPSIM_SLEEF_LANES 4
#define POPSIM_SLEEF_ISA avx2
#define POPSIM_ISA_LOOPS elementwiseLoopsAvx2
#define POPSIM_ISA_NAME "avx2"
#include "kernels/vector/isa_loops.h"
