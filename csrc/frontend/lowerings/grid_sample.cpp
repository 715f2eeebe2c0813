// F.grid_sample (aten::grid_sampler) and F.affine_grid
// (aten::affine_grid_generator) on 4-D inputs: spatial transformers and
// optical-flow warps. A sample is a weighted sum of gathered pixels, built
// from IR ops as PyTorch's CPU kernel computes it (the grid unnormalised,
// padded by clipping or reflection, floored to its four neighbours), so
// both gradients come from the ops': the image's through the gathers
// (scatter-adds), the grid's through the weights and the padding.

#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

namespace popsim::frontend::lowerings {
namespace {

// PyTorch's enum values of grid_sampler's mode and padding_mode arguments.
enum class Interpolation : int64_t { Bilinear = 0, Nearest = 1, Bicubic = 2 };
enum class Padding : int64_t { Zeros = 0, Border = 1, Reflection = 2 };

// Coordinates in [-1, 1] to pixel positions along a dimension of `size`:
// -1 and 1 are the outer pixels' centres with align_corners, their outer
// edges without it.
ir::Value* unnormalised(LoweringContext& ctx, ir::Value* coordinate, int64_t size,
                        bool alignCorners) {
  const double extent = static_cast<double>(size);
  ir::Value* shifted = affine(ctx, coordinate, 1.0, 1.0);
  return alignCorners ? affine(ctx, shifted, (extent - 1.0) / 2.0, 0.0)
                      : affine(ctx, shifted, extent / 2.0, -0.5);
}

// Positions outside [0, size - 1] moved onto the border; the gradient is
// zero there (hardtanh's, which also excludes the bounds, as PyTorch's clip).
ir::Value* clipped(LoweringContext& ctx, ir::Value* position, int64_t size) {
  return emitPointwise(ctx, position, "hardtanh", {0.0, static_cast<double>(size - 1)});
}

// Positions reflected at the border (the outer pixels' centres with
// align_corners, their outer edges without), as often as it takes, then
// clipped: PyTorch's reflect_coordinates. The gradient changes sign with
// each reflection.
ir::Value* reflected(LoweringContext& ctx, ir::Value* position, int64_t size, bool alignCorners) {
  const double low = alignCorners ? 0.0 : -0.5;
  const double span = alignCorners ? static_cast<double>(size - 1) : static_cast<double>(size);
  // One pixel (with align_corners): every position reflects onto it, with a
  // zero gradient that still carries NaN, as PyTorch's.
  if (span <= 0.0) return affine(ctx, position, 0.0, 0.0);
  ir::Value* distance = ctx.emit(ir::OpKind::Abs, {affine(ctx, position, 1.0, -low)});
  ir::Value* extra = emitBinary(ctx, "fmod", distance, floatScalar(ctx, span));
  ir::Value* flips = emitPointwise(ctx, affine(ctx, distance, 1.0 / span, 0.0), "floor");
  ir::Value* even = emitBinary(ctx, "eq", emitBinary(ctx, "fmod", flips, floatScalar(ctx, 2.0)),
                               floatScalar(ctx, 0.0));
  ir::Value* result = ctx.emit(ir::OpKind::Where, {even, affine(ctx, extra, 1.0, low),
                                                   affine(ctx, extra, -1.0, span + low)});
  return clipped(ctx, result, size);
}

ir::Value* sourcePositions(LoweringContext& ctx, ir::Value* coordinate, int64_t size,
                           Padding padding, bool alignCorners) {
  ir::Value* position = unnormalised(ctx, coordinate, size, alignCorners);
  if (padding == Padding::Border) return clipped(ctx, position, size);
  if (padding == Padding::Reflection) return reflected(ctx, position, size, alignCorners);
  return position;
}

struct Image {
  ir::Value* pixels; // [N, C, H * W]
  int64_t n, c, h, w;
};

// The pixels at whole positions (x, y) ([N, 1, P] floats), each channel
// times `weight`; zero where the position is outside the image (and its
// weight's gradient zero there), whatever the padding.
ir::Value* tap(LoweringContext& ctx, const Image& image, ir::Value* x, ir::Value* y,
               ir::Value* weight) {
  const auto between = [&](ir::Value* v, int64_t size) {
    return emitBinary(ctx, "logical_and", emitBinary(ctx, "ge", v, floatScalar(ctx, 0.0)),
                      emitBinary(ctx, "le", v, floatScalar(ctx, static_cast<double>(size - 1))));
  };
  ir::Value* inside = emitBinary(ctx, "logical_and", between(x, image.w), between(y, image.h));
  // Row-major positions, exact in float for any image popsim can hold; 0
  // outside (NaN and infinite positions included), so every gather is in range.
  ir::Value* flat =
      ctx.emit(ir::OpKind::Add, {affine(ctx, y, static_cast<double>(image.w), 0.0), x});
  flat = ctx.emit(ir::OpKind::Where, {inside, flat, floatScalar(ctx, 0.0)});
  const ir::Shape gathered = {image.n, image.c, flat->type().shape[2]};
  ir::Value* index = broadcastTo(ctx, castTo(ctx, flat, ir::DType::Int64), gathered);
  ir::Value* values = ctx.emit(ir::OpKind::Gather, {image.pixels, index}, {{"dim", int64_t{2}}});
  values = ctx.emit(ir::OpKind::Where, {inside, values, floatScalar(ctx, 0.0)});
  return weight == nullptr ? values : ctx.emit(ir::OpKind::Mul, {values, weight});
}

// grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
// input [N, C, H, W], grid [N, Ho, Wo, 2] of (x, y) in [-1, 1] -> [N, C, Ho, Wo].
void lowerGridSampler(LoweringContext& ctx) {
  ir::Value* input = ctx.tensor(0);
  ir::Value* grid = ctx.tensor(1);
  const auto interpolation = static_cast<Interpolation>(ctx.toInt(2));
  const auto padding = static_cast<Padding>(ctx.toInt(3));
  const bool alignCorners = ctx.toBool(4);
  if (input->type().rank() != 4) {
    ctx.unsupported("grid_sample of a " + std::to_string(input->type().rank()) +
                    "-D input: popsim samples 4-D (N, C, H, W) images; volumetric (5-D) "
                    "sampling is not lowered");
  }
  if (interpolation == Interpolation::Bicubic) {
    ctx.unsupported("grid_sample with mode='bicubic': popsim samples with 'bilinear' and "
                    "'nearest'");
  }
  if (!ir::isFloat(input->type().dtype) || input->type().dtype != grid->type().dtype) {
    ctx.unsupported("grid_sample of a " + input->type().str() + " input with a " +
                    grid->type().str() + " grid: both must be float32, or both float16");
  }
  const ir::Shape& shape = input->type().shape;
  const Image image = {reshape(ctx, input, {shape[0], shape[1], shape[2] * shape[3]}), shape[0],
                       shape[1], shape[2], shape[3]};
  const ir::Shape& gridShape = grid->type().shape;
  const int64_t points = gridShape[1] * gridShape[2];
  const auto coordinate = [&](int64_t axis) {
    return reshape(ctx, sliceAlong(ctx, grid, 3, axis, axis + 1), {image.n, 1, points});
  };
  ir::Value* x = sourcePositions(ctx, coordinate(0), image.w, padding, alignCorners);
  ir::Value* y = sourcePositions(ctx, coordinate(1), image.h, padding, alignCorners);
  ir::Value* sampled = nullptr;
  if (interpolation == Interpolation::Nearest) {
    // Halves round to even, as std::nearbyint in PyTorch's kernel.
    sampled =
        tap(ctx, image, emitPointwise(ctx, x, "round"), emitPointwise(ctx, y, "round"), nullptr);
  } else {
    ir::Value* west = emitPointwise(ctx, x, "floor");
    ir::Value* north = emitPointwise(ctx, y, "floor");
    ir::Value* east = affine(ctx, west, 1.0, 1.0);
    ir::Value* south = affine(ctx, north, 1.0, 1.0);
    ir::Value* toEast = ctx.emit(ir::OpKind::Sub, {east, x});
    ir::Value* fromWest = ctx.emit(ir::OpKind::Sub, {x, west});
    ir::Value* toSouth = ctx.emit(ir::OpKind::Sub, {south, y});
    ir::Value* fromNorth = ctx.emit(ir::OpKind::Sub, {y, north});
    const auto weight = [&](ir::Value* a, ir::Value* b) {
      return ctx.emit(ir::OpKind::Mul, {a, b});
    };
    // PyTorch's order: nw + ne + sw + se.
    sampled = tap(ctx, image, west, north, weight(toEast, toSouth));
    sampled = ctx.emit(ir::OpKind::Add,
                       {sampled, tap(ctx, image, east, north, weight(fromWest, toSouth))});
    sampled = ctx.emit(ir::OpKind::Add,
                       {sampled, tap(ctx, image, west, south, weight(toEast, fromNorth))});
    sampled = ctx.emit(ir::OpKind::Add,
                       {sampled, tap(ctx, image, east, south, weight(fromWest, fromNorth))});
  }
  ctx.setOutput(0, reshape(ctx, sampled, {image.n, image.c, gridShape[1], gridShape[2]}));
}

// affine_grid_generator(theta, size, align_corners): theta [N, 2, 3] and
// size (N, C, H, W) -> [N, H, W, 2], each output pixel's (x, y, 1) in
// [-1, 1] times theta transposed, as PyTorch's base grid and bmm.
void lowerAffineGrid(LoweringContext& ctx) {
  ir::Value* theta = ctx.tensor(0);
  const std::vector<int64_t> size = ctx.toIntList(1);
  const bool alignCorners = ctx.toBool(2);
  if (size.size() != 4) {
    ctx.unsupported("affine_grid of a " + std::to_string(size.size()) +
                    "-D size: popsim generates 2-D grids (size N, C, H, W) for grid_sample");
  }
  const int64_t n = size[0], h = size[2], w = size[3];
  // PyTorch's linspace(-1, 1, steps) (0 for one step), times (steps - 1) and
  // divided by steps without align_corners.
  const auto positions = [&](int64_t steps) {
    std::vector<float> values(static_cast<size_t>(steps), 0.0f);
    const float step = steps > 1 ? 2.0f / static_cast<float>(steps - 1) : 0.0f;
    for (int64_t i = 0; i < steps && steps > 1; ++i) {
      float v = i < steps / 2 ? -1.0f + step * static_cast<float>(i)
                              : 1.0f - step * static_cast<float>(steps - 1 - i);
      if (!alignCorners) v = v * static_cast<float>(steps - 1) / static_cast<float>(steps);
      values[static_cast<size_t>(i)] = v;
    }
    return values;
  };
  const std::vector<float> xs = positions(w), ys = positions(h);
  std::vector<float> base;
  base.reserve(static_cast<size_t>(h * w * 3));
  for (int64_t i = 0; i < h; ++i) {
    for (int64_t j = 0; j < w; ++j) {
      base.insert(base.end(), {xs[static_cast<size_t>(j)], ys[static_cast<size_t>(i)], 1.0f});
    }
  }
  ir::Value* grid = floatConstant(ctx, base, ir::Shape{1, h * w, 3});
  ir::Value* transposed = permute(ctx, castTo(ctx, theta, ir::DType::Float32), {0, 2, 1});
  ir::Value* points =
      ctx.emit(ir::OpKind::MatMul, {broadcastTo(ctx, grid, {n, h * w, 3}), transposed});
  ctx.setOutput(0, castTo(ctx, reshape(ctx, points, {n, h, w, 2}), theta->type().dtype));
}

} // namespace

void registerGridSampling(LoweringRegistry& registry) {
  registry.add("aten::grid_sampler", lowerGridSampler);
  registry.add("aten::grid_sampler_2d", lowerGridSampler);
  registry.add("aten::affine_grid_generator", lowerAffineGrid);
}

} // namespace popsim::frontend::lowerings
