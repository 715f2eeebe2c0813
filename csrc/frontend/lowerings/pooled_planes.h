#pragma once

// Pooling of 1-D, 2-D and 3-D inputs on popsim's 2-D pooling ops: rows as
// planes of height one, and volumes as their planes pooled and then their
// depth (separable: the max of maxima and the mean of means equal the
// pooled box, with the first maximum in (depth, row, column) order).

#include "frontend/lowering_context.h"

#include <functional>

namespace popsim::frontend::lowerings {

// Pooled values and, for max pooling, where each maximum is: its int64
// position in the flattened input plane or volume (PyTorch's indices).
struct Pooled {
  ir::Value* values = nullptr;
  ir::Value* indices = nullptr;
};

// One 2-D pooling op applied to [N, C, H, W].
using PlanePool = std::function<Pooled(ir::Value* planes)>;

// x as [N, C, spatial...]: an unbatched [C, spatial...] gets a batch of one.
ir::Value* batched(LoweringContext& ctx, ir::Value* x, int64_t spatialDims);
// y without the batch dimension `batched` added to `input`, if it did.
ir::Value* unbatchedLike(LoweringContext& ctx, ir::Value* y, ir::Value* input, int64_t spatialDims);

// x [N, C, L] pooled as [N, C, 1, L].
Pooled poolRows(LoweringContext& ctx, ir::Value* x, const PlanePool& pool);
// x [N, C, D, H, W]: each depth's (H, W) plane by `planes`, then the depth
// by `depths` (over [N * C, H' W', 1, D]).
Pooled poolVolume(LoweringContext& ctx, ir::Value* x, const PlanePool& planes,
                  const PlanePool& depths);

// Output 0 the values and output 1 (where the op has it) the indices, each
// shaped like `input` (batched or not).
void setPooledOutputs(LoweringContext& ctx, const Pooled& pooled, ir::Value* input,
                      int64_t spatialDims);

} // namespace popsim::frontend::lowerings
