// F.grid_sample (aten::grid_sampler) and F.affine_grid
// (aten::affine_grid_generator) on 4-D images and 5-D volumes: spatial
// transformers, optical-flow warps and volumetric registration (VoxelMorph's
// spatial transformer). A sample is a weighted sum of gathered pixels, built
// from IR ops as PyTorch's CPU kernels compute it (the grid unnormalised,
// padded by clipping or reflection, floored to its 4 or 8 neighbours), so
// both gradients come from the ops': the image's through the gathers
// (scatter-adds), the grid's through the weights and the padding.

#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <string>
#include <vector>

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

// A position moved by the padding: onto the border, or reflected into the image.
ir::Value* padded(LoweringContext& ctx, ir::Value* position, int64_t size, Padding padding,
                  bool alignCorners) {
  if (padding == Padding::Border) return clipped(ctx, position, size);
  if (padding == Padding::Reflection) return reflected(ctx, position, size, alignCorners);
  return position;
}

struct Image {
  ir::Value* pixels; // [N, C, the spatial sizes' product]
  int64_t n, c;
  ir::Shape sizes; // spatial, outermost first: (H, W), or (D, H, W) for a volume
};

// The pixels at whole positions `at` (x first, as the grid lists them; each
// [N, 1, P] floats), each channel times `weight`; zero where the position is
// outside the image (and its weight's gradient zero there), whatever the
// padding.
ir::Value* tap(LoweringContext& ctx, const Image& image, const std::vector<ir::Value*>& at,
               ir::Value* weight) {
  const size_t dims = image.sizes.size();
  ir::Value* inside = nullptr;
  for (size_t k = 0; k < dims; ++k) {
    const int64_t size = image.sizes[dims - 1 - k];
    ir::Value* between =
        emitBinary(ctx, "logical_and", emitBinary(ctx, "ge", at[k], floatScalar(ctx, 0.0)),
                   emitBinary(ctx, "le", at[k], floatScalar(ctx, static_cast<double>(size - 1))));
    inside = inside == nullptr ? between : emitBinary(ctx, "logical_and", inside, between);
  }
  // Row-major positions in int64 (exact for volumes past float's 2^24
  // integers), each coordinate 0 outside (NaN and infinite positions
  // included), so that every gather is in range.
  ir::Value* flat = nullptr;
  for (size_t k = dims; k-- > 0;) { // the outermost dimension first
    ir::Value* whole = castTo(
        ctx, ctx.emit(ir::OpKind::Where, {inside, at[k], floatScalar(ctx, 0.0)}), ir::DType::Int64);
    const int64_t size = image.sizes[dims - 1 - k];
    flat = flat == nullptr
               ? whole
               : emitBinary(ctx, "add", affine(ctx, flat, static_cast<double>(size), 0.0), whole);
  }
  const ir::Shape gathered = {image.n, image.c, flat->type().shape[2]};
  ir::Value* index = broadcastTo(ctx, flat, gathered);
  ir::Value* values = ctx.emit(ir::OpKind::Gather, {image.pixels, index}, {{"dim", int64_t{2}}});
  values = ctx.emit(ir::OpKind::Where, {inside, values, floatScalar(ctx, 0.0)});
  return weight == nullptr ? values : ctx.emit(ir::OpKind::Mul, {values, weight});
}

// The (bi/tri)linear sample at positions `at` (x first): the 2^dims
// neighbours' taps, each weighted by its nearness along every dimension, in
// the order PyTorch's CPU kernels add them (x changing fastest: nw, ne, sw,
// se, and for a volume the top face's before the bottom's), each weight the
// product of the x, y (and z) factors in that order.
ir::Value* linearSample(LoweringContext& ctx, const Image& image,
                        const std::vector<ir::Value*>& at) {
  const size_t dims = at.size();
  std::vector<ir::Value*> low, high, toHigh, fromLow;
  for (ir::Value* position : at) {
    low.push_back(emitPointwise(ctx, position, "floor"));
    high.push_back(affine(ctx, low.back(), 1.0, 1.0));
    toHigh.push_back(ctx.emit(ir::OpKind::Sub, {high.back(), position}));
    fromLow.push_back(ctx.emit(ir::OpKind::Sub, {position, low.back()}));
  }
  ir::Value* sampled = nullptr;
  for (size_t corner = 0; corner < (size_t{1} << dims); ++corner) {
    std::vector<ir::Value*> neighbour;
    ir::Value* weight = nullptr;
    for (size_t k = 0; k < dims; ++k) {
      const bool upper = ((corner >> k) & 1) != 0;
      neighbour.push_back(upper ? high[k] : low[k]);
      ir::Value* factor = upper ? fromLow[k] : toHigh[k];
      weight = weight == nullptr ? factor : ctx.emit(ir::OpKind::Mul, {weight, factor});
    }
    ir::Value* value = tap(ctx, image, neighbour, weight);
    sampled = sampled == nullptr ? value : ctx.emit(ir::OpKind::Add, {sampled, value});
  }
  return sampled;
}

// The four weights of cubic convolution (Keys, a = -0.75, as PyTorch's
// get_cubic_upsample_coefficients) of the taps at -1, 0, 1 and 2 from the
// position's floor, `t` its distance past that floor.
std::vector<ir::Value*> cubicWeights(LoweringContext& ctx, ir::Value* t) {
  constexpr double a = -0.75;
  // ((a + 2) x - (a + 3)) x x + 1, for |x| <= 1.
  const auto inner = [&](ir::Value* x) {
    ir::Value* y = ctx.emit(ir::OpKind::Mul, {affine(ctx, x, a + 2.0, -(a + 3.0)), x});
    return affine(ctx, ctx.emit(ir::OpKind::Mul, {y, x}), 1.0, 1.0);
  };
  // ((a x - 5 a) x + 8 a) x - 4 a, for 1 < |x| < 2.
  const auto outer = [&](ir::Value* x) {
    ir::Value* y = ctx.emit(ir::OpKind::Mul, {affine(ctx, x, a, -5.0 * a), x});
    y = ctx.emit(ir::OpKind::Mul, {affine(ctx, y, 1.0, 8.0 * a), x});
    return affine(ctx, y, 1.0, -4.0 * a);
  };
  ir::Value* rest = affine(ctx, t, -1.0, 1.0); // 1 - t
  return {outer(affine(ctx, t, 1.0, 1.0)), inner(t), inner(rest),
          outer(affine(ctx, rest, 1.0, 1.0))};
}

// The bicubic sample at (x, y), unnormalised but not padded: 4 x 4 taps
// around the floor, each moved by the padding (PyTorch's get_value_bounded),
// summed along x for each row, then the rows along y, in PyTorch's order.
// The taps are whole positions, so the grid's gradient comes through the
// weights alone, as in PyTorch's backward.
ir::Value* bicubicSample(LoweringContext& ctx, const Image& image, ir::Value* x, ir::Value* y,
                         Padding padding, bool alignCorners) {
  ir::Value* west = emitPointwise(ctx, x, "floor");
  ir::Value* north = emitPointwise(ctx, y, "floor");
  const std::vector<ir::Value*> across = cubicWeights(ctx, ctx.emit(ir::OpKind::Sub, {x, west}));
  const std::vector<ir::Value*> down = cubicWeights(ctx, ctx.emit(ir::OpKind::Sub, {y, north}));
  const int64_t h = image.sizes[0], w = image.sizes[1];
  ir::Value* sampled = nullptr;
  for (int64_t i = 0; i < 4; ++i) {
    ir::Value* row =
        padded(ctx, affine(ctx, north, 1.0, static_cast<double>(i - 1)), h, padding, alignCorners);
    ir::Value* along = nullptr;
    for (int64_t j = 0; j < 4; ++j) {
      ir::Value* column =
          padded(ctx, affine(ctx, west, 1.0, static_cast<double>(j - 1)), w, padding, alignCorners);
      ir::Value* value = tap(ctx, image, {column, row}, across[static_cast<size_t>(j)]);
      along = along == nullptr ? value : ctx.emit(ir::OpKind::Add, {along, value});
    }
    ir::Value* value = ctx.emit(ir::OpKind::Mul, {along, down[static_cast<size_t>(i)]});
    sampled = sampled == nullptr ? value : ctx.emit(ir::OpKind::Add, {sampled, value});
  }
  return sampled;
}

// grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
// input [N, C, H, W], grid [N, Ho, Wo, 2] of (x, y) in [-1, 1] -> [N, C, Ho, Wo];
// or a volume: input [N, C, D, H, W], grid [N, Do, Ho, Wo, 3] of (x, y, z).
void lowerGridSampler(LoweringContext& ctx) {
  ir::Value* input = ctx.tensor(0);
  ir::Value* grid = ctx.tensor(1);
  const auto interpolation = static_cast<Interpolation>(ctx.toInt(2));
  const auto padding = static_cast<Padding>(ctx.toInt(3));
  const bool alignCorners = ctx.toBool(4);
  const int64_t rank = input->type().rank();
  if (rank != 4 && rank != 5) {
    ctx.unsupported("grid_sample of a " + std::to_string(rank) +
                    "-D input: PyTorch samples 4-D (N, C, H, W) images and 5-D (N, C, D, H, W) "
                    "volumes");
  }
  if (interpolation == Interpolation::Bicubic && rank != 4) {
    ctx.unsupported("grid_sample with mode='bicubic' of a 5-D input (PyTorch samples only 4-D "
                    "images bicubically)");
  }
  if (!ir::isFloat(input->type().dtype) || input->type().dtype != grid->type().dtype) {
    ctx.unsupported("grid_sample of a " + input->type().str() + " input with a " +
                    grid->type().str() + " grid: both must be float32, or both float16");
  }
  const ir::Shape& shape = input->type().shape;
  const ir::Shape sizes(shape.begin() + 2, shape.end());
  int64_t pixels = 1;
  for (int64_t size : sizes)
    pixels *= size;
  const Image image = {reshape(ctx, input, {shape[0], shape[1], pixels}), shape[0], shape[1],
                       sizes};
  const ir::Shape& gridShape = grid->type().shape;
  const int64_t axis = rank - 1; // the grid's last dim: (x, y) or (x, y, z)
  int64_t points = 1;
  for (int64_t d = 1; d < axis; ++d)
    points *= gridShape[static_cast<size_t>(d)];
  std::vector<ir::Value*> at; // x, y (, z)
  for (int64_t k = 0; k < axis - 1; ++k) {
    ir::Value* coordinate =
        reshape(ctx, sliceAlong(ctx, grid, axis, k, k + 1), {image.n, 1, points});
    const int64_t size = sizes[sizes.size() - 1 - k];
    ir::Value* position = unnormalised(ctx, coordinate, size, alignCorners);
    // Bicubic pads each of its taps instead (PyTorch samples only images bicubically).
    at.push_back(interpolation == Interpolation::Bicubic
                     ? position
                     : padded(ctx, position, size, padding, alignCorners));
  }
  ir::Value* sampled = nullptr;
  if (interpolation == Interpolation::Bicubic) {
    sampled = bicubicSample(ctx, image, at[0], at[1], padding, alignCorners);
  } else if (interpolation == Interpolation::Nearest) {
    // Halves round to even, as std::nearbyint in PyTorch's kernel.
    for (ir::Value*& position : at)
      position = emitPointwise(ctx, position, "round");
    sampled = tap(ctx, image, at, nullptr);
  } else {
    sampled = linearSample(ctx, image, at);
  }
  ir::Shape outShape = {image.n, image.c};
  outShape.insert(outShape.end(), gridShape.begin() + 1, gridShape.end() - 1);
  ctx.setOutput(0, reshape(ctx, sampled, outShape));
}

// affine_grid_generator(theta, size, align_corners): theta [N, 2, 3] and
// size (N, C, H, W) -> [N, H, W, 2], each output pixel's (x, y, 1) in
// [-1, 1] times theta transposed, as PyTorch's base grid and bmm; or theta
// [N, 3, 4] and size (N, C, D, H, W) -> [N, D, H, W, 3] from (x, y, z, 1).
void lowerAffineGrid(LoweringContext& ctx) {
  ir::Value* theta = ctx.tensor(0);
  const std::vector<int64_t> size = ctx.toIntList(1);
  const bool alignCorners = ctx.toBool(2);
  if (size.size() != 4 && size.size() != 5) {
    ctx.unsupported("affine_grid of a " + std::to_string(size.size()) +
                    "-D size: PyTorch generates 2-D grids (size N, C, H, W) and 3-D grids "
                    "(size N, C, D, H, W)");
  }
  const bool volume = size.size() == 5;
  const int64_t n = size[0], d = volume ? size[2] : 1, h = size[size.size() - 2], w = size.back();
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
  const std::vector<float> xs = positions(w), ys = positions(h), zs = positions(d);
  const int64_t coordinates = volume ? 4 : 3; // with the homogeneous 1
  std::vector<float> base;
  base.reserve(static_cast<size_t>(d * h * w * coordinates));
  for (int64_t k = 0; k < d; ++k) {
    for (int64_t i = 0; i < h; ++i) {
      for (int64_t j = 0; j < w; ++j) {
        base.insert(base.end(), {xs[static_cast<size_t>(j)], ys[static_cast<size_t>(i)]});
        if (volume) base.push_back(zs[static_cast<size_t>(k)]);
        base.push_back(1.0f);
      }
    }
  }
  const int64_t points = d * h * w;
  ir::Value* grid = floatConstant(ctx, base, ir::Shape{1, points, coordinates});
  ir::Value* transposed = permute(ctx, castTo(ctx, theta, ir::DType::Float32), {0, 2, 1});
  ir::Value* mapped =
      ctx.emit(ir::OpKind::MatMul, {broadcastTo(ctx, grid, {n, points, coordinates}), transposed});
  ir::Shape outShape = volume ? ir::Shape{n, d, h, w, 3} : ir::Shape{n, h, w, 2};
  ctx.setOutput(0, castTo(ctx, reshape(ctx, mapped, outShape), theta->type().dtype));
}

} // namespace

void registerGridSampling(LoweringRegistry& registry) {
  registry.add("aten::grid_sampler", lowerGridSampler);
  registry.add("aten::grid_sampler_2d", lowerGridSampler);
  registry.add("aten::grid_sampler_3d", lowerGridSampler);
  registry.add("aten::affine_grid_generator", lowerAffineGrid);
}

} // namespace popsim::frontend::lowerings
