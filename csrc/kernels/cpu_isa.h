#pragma once

#include <string>

namespace popsim::kernels {

// The vector instruction set popsim's own vectorised kernels are built for.
// It follows oneDNN's effective ISA, so ONEDNN_MAX_CPU_ISA=AVX2 on an
// AVX-512 machine shows what an AVX2 machine runs, for popsim's kernels as
// for oneDNN's.
enum class VectorIsa { Baseline, Avx2, Avx512 };

VectorIsa vectorIsa();
std::string vectorIsaName(VectorIsa isa);

// GCC target attributes for the ISA-specific clones of a vectorised loop.
#if defined(__x86_64__) && defined(__GNUC__)
#define POPSIM_TARGET_AVX2 __attribute__((target("avx2")))
#define POPSIM_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2")))
#define POPSIM_HAS_VECTOR_CLONES 1
#else
#define POPSIM_TARGET_AVX2
#define POPSIM_TARGET_AVX512
#define POPSIM_HAS_VECTOR_CLONES 0
#endif

} // namespace popsim::kernels
