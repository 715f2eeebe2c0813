// F.interpolate / nn.Upsample: nearest, nearest-exact, (bi/tri)linear and
// bicubic, 1-D to 3-D, with sizes or scale factors and align_corners, and
// bilinear and bicubic with antialias=True (torchvision's Resize). Each
// mode is separable, and PyTorch's CPU kernel interpolates the last spatial
// dimension first: so does popsim, one dimension at a time, picking the
// source slices (index_select with positions computed as PyTorch computes
// them, in float) and summing them times their weights in PyTorch's order.

#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <cmath>

namespace popsim::frontend::lowerings {
namespace {

enum class Mode { Nearest, NearestExact, Linear, Cubic, AntialiasedLinear, AntialiasedCubic };

// One tap of the resampling along a dim: a source position and a weight per
// output position.
struct Tap {
  std::vector<int64_t> positions;
  std::vector<float> weights;
};

// PyTorch's scale of a dim: 1 / the scale factor given, else in / out.
float scaleOf(int64_t in, int64_t out, std::optional<double> factor) {
  return factor.has_value() && *factor > 0.0 ? static_cast<float>(1.0 / *factor)
                                             : static_cast<float>(in) / static_cast<float>(out);
}

// The scale of the linear, cubic and antialiased modes: with align_corners
// the outer pixels' centres meet ((in - 1) / (out - 1)).
float interpolationScale(int64_t in, int64_t out, std::optional<double> factor, bool alignCorners) {
  if (!alignCorners) return scaleOf(in, out, factor);
  return out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
}

// The source coordinate of output index i for linear and cubic modes.
float sourceOf(float scale, int64_t i, bool alignCorners, bool cubic) {
  if (alignCorners) return scale * static_cast<float>(i);
  const float source = scale * (static_cast<float>(i) + 0.5f) - 0.5f;
  return !cubic && source < 0.0f ? 0.0f : source;
}

float cubic1(float x, float a) { return ((a + 2) * x - (a + 3)) * x * x + 1; }
float cubic2(float x, float a) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; }

// The antialiased modes' filters (PyTorch's aa_filter, as Pillow's): the
// triangle, and the cubic of Keys with a = -0.5 (not the -0.75 of plain bicubic).
float antialiasFilter(Mode mode, float x) {
  x = std::abs(x);
  if (mode == Mode::AntialiasedLinear) return x < 1.0f ? 1.0f - x : 0.0f;
  constexpr float a = -0.5f;
  if (x < 1.0f) return cubic1(x, a);
  if (x < 2.0f) return (((x - 5.0f) * x + 8.0f) * x - 4.0f) * a;
  return 0.0f;
}

// Antialiased resampling (antialias=True), as PyTorch's CPU kernel weighs
// it: each output averages the inputs under its filter, stretched by the
// scale when it shrinks the dim, the weights normalised to sum to 1 and
// computed in float as PyTorch computes them. An output takes as many taps
// as its window covers; the others get weight 0.
std::vector<Tap> antialiasedTapsOf(Mode mode, int64_t in, int64_t out, float scale) {
  const float base = mode == Mode::AntialiasedLinear ? 1.0f : 2.0f; // half the filter's width
  const float support = scale >= 1.0f ? base * scale : base;
  const float invscale = scale >= 1.0f ? static_cast<float>(1.0 / scale) : 1.0f;
  std::vector<std::vector<float>> weights(static_cast<size_t>(out));
  std::vector<int64_t> first(static_cast<size_t>(out));
  size_t widest = 1;
  for (int64_t i = 0; i < out; ++i) {
    const auto center = static_cast<float>(static_cast<double>(scale) * (i + 0.5));
    const int64_t low = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), int64_t{0});
    const int64_t count = std::min(static_cast<int64_t>(center + support + 0.5), in) - low;
    std::vector<float>& w = weights[static_cast<size_t>(i)];
    float total = 0.0f;
    for (int64_t j = 0; j < count; ++j) {
      const float offset = static_cast<float>(j + low) - center;
      w.push_back(antialiasFilter(
          mode, static_cast<float>((static_cast<double>(offset) + 0.5) * invscale)));
      total += w.back();
    }
    for (float& value : w)
      if (total != 0.0f) value /= total;
    first[static_cast<size_t>(i)] = std::min(low, in - 1);
    widest = std::max(widest, w.size());
  }
  std::vector<Tap> taps(widest);
  for (size_t k = 0; k < widest; ++k) {
    for (int64_t i = 0; i < out; ++i) {
      const std::vector<float>& w = weights[static_cast<size_t>(i)];
      const int64_t at = first[static_cast<size_t>(i)];
      taps[k].positions.push_back(k < w.size() ? at + static_cast<int64_t>(k) : at);
      taps[k].weights.push_back(k < w.size() ? w[k] : 0.0f);
    }
  }
  return taps;
}

std::vector<Tap> tapsOf(Mode mode, int64_t in, int64_t out, std::optional<double> factor,
                        bool alignCorners) {
  if (mode == Mode::AntialiasedLinear || mode == Mode::AntialiasedCubic) {
    return antialiasedTapsOf(mode, in, out, interpolationScale(in, out, factor, alignCorners));
  }
  std::vector<Tap> taps(mode == Mode::Cubic ? 4 : (mode == Mode::Linear ? 2 : 1));
  for (int64_t i = 0; i < out; ++i) {
    if (mode == Mode::Nearest || mode == Mode::NearestExact) {
      int64_t source = 0;
      if (out == in) {
        source = i;
      } else if (mode == Mode::Nearest && out == 2 * in) {
        source = i >> 1;
      } else {
        const float scale = scaleOf(in, out, factor);
        const float at = mode == Mode::Nearest ? static_cast<float>(i) * scale
                                               : (static_cast<float>(i) + 0.5f) * scale;
        source = std::min(static_cast<int64_t>(std::floor(at)), in - 1);
      }
      taps[0].positions.push_back(source);
      taps[0].weights.push_back(1.0f);
      continue;
    }
    const float scale = interpolationScale(in, out, factor, alignCorners);
    if (mode == Mode::Linear) {
      int64_t first = i, second = i;
      float far = 0.0f;
      if (out != in) {
        const float source = sourceOf(scale, i, alignCorners, false);
        first = static_cast<int64_t>(source);
        second = first + (first < in - 1 ? 1 : 0);
        far = std::min(std::max(source - static_cast<float>(first), 0.0f), 1.0f);
      }
      taps[0].positions.push_back(first);
      taps[0].weights.push_back(1.0f - far);
      taps[1].positions.push_back(second);
      taps[1].weights.push_back(far);
      continue;
    }
    const float source = sourceOf(scale, i, alignCorners, true);
    const float floor = std::floor(source);
    const float t = source - floor;
    constexpr float kA = -0.75f;
    const float weights[4] = {cubic2(t + 1.0f, kA), cubic1(t, kA), cubic1(1.0f - t, kA),
                              cubic2(1.0f - t + 1.0f, kA)};
    for (int64_t k = 0; k < 4; ++k) {
      const int64_t at = static_cast<int64_t>(floor) - 1 + k;
      taps[static_cast<size_t>(k)].positions.push_back(std::min(std::max<int64_t>(at, 0), in - 1));
      taps[static_cast<size_t>(k)].weights.push_back(weights[k]);
    }
  }
  return taps;
}

// x resampled along dim to `out` elements: sum over taps of x[positions] x weights.
ir::Value* resample(LoweringContext& ctx, ir::Value* x, int64_t dim, int64_t out, Mode mode,
                    std::optional<double> factor, bool alignCorners) {
  const int64_t in = x->type().shape[static_cast<size_t>(dim)];
  ir::Shape along(static_cast<size_t>(x->type().rank()), 1);
  along[static_cast<size_t>(dim)] = out;
  ir::Value* sum = nullptr;
  for (const Tap& tap : tapsOf(mode, in, out, factor, alignCorners)) {
    ir::Value* picked =
        ctx.emit(ir::OpKind::IndexSelect, {x, int64Constant(ctx, tap.positions)}, {{"dim", dim}});
    if (mode == Mode::Nearest || mode == Mode::NearestExact) return picked;
    ir::Value* term = ctx.emit(ir::OpKind::Mul, {picked, floatConstant(ctx, tap.weights, along)});
    sum = sum == nullptr ? term : ctx.emit(ir::OpKind::Add, {sum, term});
  }
  return sum;
}

// upsample_*(input, output_size, [align_corners,] scale_factors), the .vec
// overloads F.interpolate traces, and the overloads with an output size and
// one scale per dim.
template <Mode M> void lowerUpsample(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  const int64_t spatial = x->type().rank() - 2;
  if (spatial < 1 || spatial > 3)
    ctx.unsupported("upsampling a tensor of rank " + std::to_string(x->type().rank()));
  const std::optional<size_t> alignIndex = ctx.argumentIndex("align_corners");
  const bool alignCorners =
      alignIndex.has_value() && !ctx.isNone(*alignIndex) && ctx.toBool(*alignIndex);
  std::vector<std::optional<double>> factors(static_cast<size_t>(spatial));
  if (const auto index = ctx.argumentIndex("scale_factors"); index && !ctx.isNone(*index)) {
    const std::vector<double> given = ctx.toDoubleList(*index);
    if (given.size() != factors.size()) ctx.unsupported("one scale factor per spatial dimension");
    for (size_t d = 0; d < given.size(); ++d)
      factors[d] = given[d];
  } else {
    const std::vector<const char*> names =
        spatial == 1   ? std::vector<const char*>{"scales"}
        : spatial == 2 ? std::vector<const char*>{"scales_h", "scales_w"}
                       : std::vector<const char*>{"scales_d", "scales_h", "scales_w"};
    for (size_t d = 0; d < names.size(); ++d) {
      if (const auto scale = ctx.argumentIndex(names[d]); scale && !ctx.isNone(*scale)) {
        factors[d] = ctx.toDouble(*scale);
      }
    }
  }
  std::vector<int64_t> sizes;
  if (const auto index = ctx.argumentIndex("output_size"); index && !ctx.isNone(*index)) {
    sizes = ctx.toIntList(*index);
  } else {
    for (int64_t d = 0; d < spatial; ++d) {
      if (!factors[static_cast<size_t>(d)])
        ctx.unsupported("upsampling without a size or a scale factor");
      sizes.push_back(static_cast<int64_t>(
          std::floor(static_cast<double>(x->type().shape[static_cast<size_t>(d + 2)]) *
                     *factors[static_cast<size_t>(d)])));
    }
  }
  if (static_cast<int64_t>(sizes.size()) != spatial)
    ctx.unsupported("one output size per spatial dimension");
  for (int64_t d = spatial - 1; d >= 0; --d) { // the last dim first, as PyTorch
    if (sizes[static_cast<size_t>(d)] <= 0) ctx.unsupported("an output size below 1");
    x = resample(ctx, x, d + 2, sizes[static_cast<size_t>(d)], M, factors[static_cast<size_t>(d)],
                 alignCorners);
  }
  ctx.setOutput(0, x);
}

} // namespace

void registerUpsampling(LoweringRegistry& registry) {
  for (const char* n : {"1d", "2d", "3d"}) {
    const std::string dims = n;
    registry.add("aten::upsample_nearest" + dims, lowerUpsample<Mode::Nearest>);
    registry.add("aten::_upsample_nearest_exact" + dims, lowerUpsample<Mode::NearestExact>);
  }
  registry.add("aten::upsample_linear1d", lowerUpsample<Mode::Linear>);
  registry.add("aten::upsample_bilinear2d", lowerUpsample<Mode::Linear>);
  registry.add("aten::upsample_trilinear3d", lowerUpsample<Mode::Linear>);
  registry.add("aten::upsample_bicubic2d", lowerUpsample<Mode::Cubic>);
  registry.add("aten::_upsample_bilinear2d_aa", lowerUpsample<Mode::AntialiasedLinear>);
  registry.add("aten::_upsample_bicubic2d_aa", lowerUpsample<Mode::AntialiasedCubic>);
}

} // namespace popsim::frontend::lowerings
