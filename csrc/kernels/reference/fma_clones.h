#pragma once

// Loops whose arithmetic needs fused multiply-adds (to repeat PyTorch's
// vectorised kernels bit for bit) are compiled twice on x86-64 with GCC: for
// x86-64-v3 CPUs (AVX2 and FMA, where std::fma is one instruction and the
// loop vectorises) and for any CPU (where std::fma is a libm call); the
// loader picks one. Both compute the same results: fma rounds once either
// way, and the kernels build with -ffp-contract=off, so no other
// multiply-add is fused in either.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define POPSIM_FMA_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define POPSIM_FMA_CLONES
#endif
