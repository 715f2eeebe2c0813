// Complex numbers, which popsim recognises only to refuse them with the
// reason and what to write instead: the IPU has no complex arithmetic (nor
// does PopTorch compute with complex dtypes). Models meet them mostly in
// rotary position embeddings written with torch.polar and view_as_complex.

#include "frontend/lowering_registry.h"

namespace popsim::frontend::lowerings {

void registerComplexNumbers(LoweringRegistry& registry) {
  for (const char* op :
       {"aten::view_as_complex", "aten::view_as_real", "aten::polar", "aten::complex"}) {
    registry.refuse(op,
                    "complex numbers, which the IPU does not compute with: write the arithmetic "
                    "with real tensors (rotary embeddings: x * cos + rotate_half(x) * sin, with "
                    "cos and sin as float buffers, where rotate_half(x) is "
                    "cat([-x[..., d/2:], x[..., :d/2]], -1))");
  }
}

} // namespace popsim::frontend::lowerings
