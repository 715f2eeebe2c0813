#include "kernels/vector/elementwise_loops.h"

namespace popsim::kernels::vector {

std::optional<ElementwiseLoops> elementwiseLoops(VectorIsa isa) {
  switch (isa) {
  case VectorIsa::Avx512: return elementwiseLoopsAvx512();
  case VectorIsa::Avx2: return elementwiseLoopsAvx2();
  case VectorIsa::Baseline: break;
  }
  return std::nullopt;
}

} // namespace popsim::kernels::vector
