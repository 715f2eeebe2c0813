#include "frontend/lowerings/pooled_planes.h"
#include "frontend/lowerings/helpers.h"

namespace popsim::frontend::lowerings {

ir::Value* batched(LoweringContext& ctx, ir::Value* x, int64_t spatialDims) {
  if (x->type().rank() == spatialDims + 1) {
    ir::Shape shape = x->type().shape;
    shape.insert(shape.begin(), 1);
    return reshape(ctx, x, shape);
  }
  if (x->type().rank() != spatialDims + 2) {
    ctx.unsupported(ctx.opName() + " of a tensor of rank " + std::to_string(x->type().rank()) +
                    "; it takes [N, C, ...] or [C, ...] with " + std::to_string(spatialDims) +
                    " spatial dimensions");
  }
  return x;
}

ir::Value* unbatchedLike(LoweringContext& ctx, ir::Value* y, ir::Value* input,
                         int64_t spatialDims) {
  if (input->type().rank() == spatialDims + 2) return y;
  const ir::Shape& shape = y->type().shape;
  return reshape(ctx, y, ir::Shape(shape.begin() + 1, shape.end()));
}

Pooled poolRows(LoweringContext& ctx, ir::Value* x, const PlanePool& pool) {
  const ir::Shape& shape = x->type().shape;
  const Pooled rows = pool(reshape(ctx, x, {shape[0], shape[1], 1, shape[2]}));
  const int64_t length = rows.values->type().shape[3];
  const auto unrow = [&](ir::Value* v) {
    return v ? reshape(ctx, v, {shape[0], shape[1], length}) : nullptr;
  };
  return {unrow(rows.values), unrow(rows.indices)}; // a row's position is its index
}

Pooled poolVolume(LoweringContext& ctx, ir::Value* x, const PlanePool& planes,
                  const PlanePool& depths) {
  const ir::Shape shape = x->type().shape; // [N, C, D, H, W]
  const int64_t maps = shape[0] * shape[1];
  const Pooled flat = planes(reshape(ctx, x, {shape[0], shape[1] * shape[2], shape[3], shape[4]}));
  const int64_t height = flat.values->type().shape[2];
  const int64_t width = flat.values->type().shape[3];
  const int64_t pixels = height * width;
  // [N, C * D, H', W'] -> [N * C, H' W', D]: depth last.
  const auto depthLast = [&](ir::Value* v) {
    return permute(ctx, reshape(ctx, v, {maps, shape[2], pixels}), {0, 2, 1});
  };
  const Pooled deep = depths(reshape(ctx, depthLast(flat.values), {maps, pixels, 1, shape[2]}));
  const int64_t depth = deep.values->type().shape[3];
  const auto back = [&](ir::Value* v) {
    return reshape(ctx, permute(ctx, reshape(ctx, v, {maps, pixels, depth}), {0, 2, 1}),
                   {shape[0], shape[1], depth, height, width});
  };
  Pooled result{back(deep.values), nullptr};
  if (flat.indices != nullptr && deep.indices != nullptr) {
    // The maximum's depth d from the depth pass, its position in plane d
    // from the plane pass: d * H * W + that position.
    ir::Value* chosen = reshape(ctx, deep.indices, {maps, pixels, depth});
    ir::Value* inPlane =
        ctx.emit(ir::OpKind::Gather, {depthLast(flat.indices), chosen}, {{"dim", int64_t{2}}});
    ir::Value* planeSize =
        constantFilled(ctx, {ir::DType::Int64, {}}, static_cast<double>(shape[3] * shape[4]));
    result.indices =
        back(emitBinary(ctx, "add", emitBinary(ctx, "mul", chosen, planeSize), inPlane));
  }
  return result;
}

void setPooledOutputs(LoweringContext& ctx, const Pooled& pooled, ir::Value* input,
                      int64_t spatialDims) {
  ctx.setOutput(0, unbatchedLike(ctx, pooled.values, input, spatialDims));
  if (ctx.numOutputs() > 1 && pooled.indices != nullptr) {
    ctx.setOutput(1, unbatchedLike(ctx, pooled.indices, input, spatialDims));
  }
}

} // namespace popsim::frontend::lowerings
