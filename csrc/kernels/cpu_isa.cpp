#include "kernels/cpu_isa.h"

#include <oneapi/dnnl/dnnl.hpp>

namespace popsim::kernels {

VectorIsa vectorIsa() {
  // oneDNN already combines what the CPU has with ONEDNN_MAX_CPU_ISA.
  static const VectorIsa isa = [] {
    if (!POPSIM_HAS_VECTOR_CLONES) return VectorIsa::Baseline;
    switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx512_core:
    case dnnl::cpu_isa::avx512_core_vnni:
    case dnnl::cpu_isa::avx512_core_bf16:
    case dnnl::cpu_isa::avx512_core_amx: return VectorIsa::Avx512;
    case dnnl::cpu_isa::avx2:
    case dnnl::cpu_isa::avx2_vnni: return VectorIsa::Avx2;
    default: return VectorIsa::Baseline;
    }
  }();
  return isa;
}

std::string vectorIsaName(VectorIsa isa) {
  switch (isa) {
  case VectorIsa::Avx512: return "avx512";
  case VectorIsa::Avx2: return "avx2";
  case VectorIsa::Baseline: break;
  }
  return "sse2";
}

} // namespace popsim::kernels
