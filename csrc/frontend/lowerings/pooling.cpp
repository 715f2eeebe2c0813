#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

namespace popsim::frontend::lowerings {
namespace {

// Runs a pooling op on a [N, C, H, W] view of an unbatched [C, H, W] input.
void emitPool(LoweringContext& ctx, ir::OpKind kind, ir::Attributes attrs) {
  ir::Value* x = floatTensor(ctx, 0);
  const bool unbatched = x->type().rank() == 3;
  if (unbatched) {
    ir::Shape batched = x->type().shape;
    batched.insert(batched.begin(), 1);
    x = reshape(ctx, x, batched);
  }
  ir::Value* y = ctx.emit(kind, {x}, std::move(attrs));
  if (unbatched) {
    const ir::Shape& shape = y->type().shape;
    y = reshape(ctx, y, ir::Shape(shape.begin() + 1, shape.end()));
  }
  ctx.setOutput(0, y);
}

// Pooling stride defaults to the kernel size when given as an empty list.
std::vector<int64_t> strideOrKernel(LoweringContext& ctx, size_t index,
                                    const std::vector<int64_t>& kernel) {
  const std::vector<int64_t> stride = ctx.toIntList(index);
  return stride.empty() ? kernel : pair(ctx, stride, "stride");
}

// aten::max_pool2d(input, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False)
void lowerMaxPool(LoweringContext& ctx) {
  const std::vector<int64_t> kernel = pair(ctx, ctx.toIntList(1), "kernel_size");
  emitPool(ctx, ir::OpKind::MaxPool2d,
           {{"kernel", kernel},
            {"stride", strideOrKernel(ctx, 2, kernel)},
            {"padding", pair(ctx, ctx.toIntList(3), "padding")},
            {"dilation", pair(ctx, ctx.toIntList(4), "dilation")},
            {"ceil_mode", ctx.toBool(5)}});
}

// aten::avg_pool2d(input, kernel_size, stride=[], padding=0, ceil_mode=False,
//                  count_include_pad=True, divisor_override=None)
void lowerAvgPool(LoweringContext& ctx) {
  const std::vector<int64_t> kernel = pair(ctx, ctx.toIntList(1), "kernel_size");
  const int64_t divisor = ctx.isNone(6) ? 0 : ctx.toInt(6);
  if (!ctx.isNone(6) && divisor <= 0) {
    ctx.unsupported("divisor_override must be positive");
  }
  emitPool(ctx, ir::OpKind::AvgPool2d,
           {{"kernel", kernel},
            {"stride", strideOrKernel(ctx, 2, kernel)},
            {"padding", pair(ctx, ctx.toIntList(3), "padding")},
            {"ceil_mode", ctx.toBool(4)},
            {"count_include_pad", ctx.toBool(5)},
            {"divisor_override", divisor}});
}

// aten::adaptive_avg_pool2d(input, output_size)
void lowerAdaptiveAvgPool(LoweringContext& ctx) {
  emitPool(ctx, ir::OpKind::AdaptiveAvgPool2d,
           {{"output_size", pair(ctx, ctx.toIntList(1), "output_size")}});
}

// One value per pooled dimension (`count` of them) from a list of one or `count`.
std::vector<int64_t> perDim(const LoweringContext& ctx, std::vector<int64_t> values, size_t count,
                            const std::string& what) {
  if (values.size() == 1) values.assign(count, values[0]);
  if (values.size() != count) {
    ctx.unsupported(what + " has " + std::to_string(values.size()) + " values for " +
                    std::to_string(count) + " pooled dimensions");
  }
  return values;
}

// A pooling window per pooled dimension: kernel, stride, padding, dilation.
struct Window {
  std::vector<int64_t> kernel, stride, padding, dilation;
};

Window windowOf(LoweringContext& ctx, size_t count, std::optional<size_t> dilationIndex) {
  Window w;
  w.kernel = perDim(ctx, ctx.toIntList(1), count, "kernel_size");
  const std::vector<int64_t> stride = ctx.toIntList(2);
  w.stride = stride.empty() ? w.kernel : perDim(ctx, stride, count, "stride");
  w.padding = perDim(ctx, ctx.toIntList(3), count, "padding");
  w.dilation = dilationIndex ? perDim(ctx, ctx.toIntList(*dilationIndex), count, "dilation")
                             : std::vector<int64_t>(count, 1);
  return w;
}

// x [N, C, *spatial] (or unbatched [C, *spatial]) as [N, C, spatial...]
// with a batch dimension.
ir::Value* batched(LoweringContext& ctx, ir::Value* x, int64_t spatialDims) {
  if (x->type().rank() == spatialDims + 1) {
    ir::Shape shape = x->type().shape;
    shape.insert(shape.begin(), 1);
    return reshape(ctx, x, shape);
  }
  if (x->type().rank() != spatialDims + 2) {
    ctx.unsupported("pooling " + std::to_string(spatialDims) + "-D of a tensor of rank " +
                    std::to_string(x->type().rank()) + "; it takes [N, C, ...] or [C, ...] with " +
                    std::to_string(spatialDims) + " spatial dimensions");
  }
  return x;
}

ir::Value* unbatchedLike(LoweringContext& ctx, ir::Value* y, ir::Value* input,
                         int64_t spatialDims) {
  if (input->type().rank() == spatialDims + 2) return y;
  const ir::Shape& shape = y->type().shape;
  return reshape(ctx, y, ir::Shape(shape.begin() + 1, shape.end()));
}

// A 2-D pooling op along the last dimension of x [N, C, L] (kernel 1 across).
ir::Value* poolLast(LoweringContext& ctx, ir::OpKind kind, ir::Value* x, const Window& w, size_t d,
                    ir::Attributes extra) {
  const ir::Shape& shape = x->type().shape;
  ir::Value* rows = reshape(ctx, x, {shape[0], shape[1], 1, shape[2]});
  extra.set("kernel", std::vector<int64_t>{1, w.kernel[d]});
  extra.set("stride", std::vector<int64_t>{1, w.stride[d]});
  extra.set("padding", std::vector<int64_t>{0, w.padding[d]});
  if (kind == ir::OpKind::MaxPool2d) extra.set("dilation", std::vector<int64_t>{1, w.dilation[d]});
  ir::Value* y = ctx.emit(kind, {rows}, std::move(extra));
  return reshape(ctx, y, {shape[0], shape[1], y->type().shape[3]});
}

// The per-op attributes of max and average pooling besides the window.
ir::Attributes maxAttrs(bool ceil) { return {{"ceil_mode", ceil}}; }
ir::Attributes avgAttrs(bool ceil, bool countPad) {
  return {{"ceil_mode", ceil}, {"count_include_pad", countPad}, {"divisor_override", int64_t{0}}};
}

// max_pool1d(input, kernel, stride, padding, dilation, ceil_mode) and
// avg_pool1d(input, kernel, stride, padding, ceil_mode, count_include_pad):
// the 2-D ops over a [N, C, 1, L] view.
template <bool Max> void lowerPool1d(LoweringContext& ctx) {
  ir::Value* input = floatTensor(ctx, 0);
  const Window w = windowOf(ctx, 1, Max ? std::optional<size_t>(4) : std::nullopt);
  const ir::Attributes extra =
      Max ? maxAttrs(ctx.toBool(5)) : avgAttrs(ctx.toBool(4), ctx.toBool(5));
  ir::Value* y = poolLast(ctx, Max ? ir::OpKind::MaxPool2d : ir::OpKind::AvgPool2d,
                          batched(ctx, input, 1), w, 0, extra);
  ctx.setOutput(0, unbatchedLike(ctx, y, input, 1));
}

// max_pool3d(input, kernel, stride, padding, dilation, ceil_mode) and
// avg_pool3d(input, kernel, stride, padding, ceil_mode, count_include_pad,
// divisor_override): a box pools as its (H, W) windows and then depth, as the
// max of maxima (the first largest in (D, H, W) order takes the gradient, as
// in PyTorch) and the mean of means (PyTorch's divisor is the product of the
// per-dimension counts, padding counted or not).
template <bool Max> void lowerPool3d(LoweringContext& ctx) {
  ir::Value* input = floatTensor(ctx, 0);
  const Window w = windowOf(ctx, 3, Max ? std::optional<size_t>(4) : std::nullopt);
  if (!Max && ctx.numInputs() > 6 && !ctx.isNone(6)) {
    ctx.unsupported("avg_pool3d with divisor_override (the divisor of a whole box); pool with "
                    "the default divisor and rescale the result");
  }
  const ir::OpKind kind = Max ? ir::OpKind::MaxPool2d : ir::OpKind::AvgPool2d;
  const ir::Attributes extra =
      Max ? maxAttrs(ctx.toBool(5)) : avgAttrs(ctx.toBool(4), ctx.toBool(5));
  ir::Value* x = batched(ctx, input, 3);
  const ir::Shape shape = x->type().shape; // [N, C, D, H, W]
  ir::Attributes planar = extra;
  planar.set("kernel", std::vector<int64_t>{w.kernel[1], w.kernel[2]});
  planar.set("stride", std::vector<int64_t>{w.stride[1], w.stride[2]});
  planar.set("padding", std::vector<int64_t>{w.padding[1], w.padding[2]});
  if (Max) planar.set("dilation", std::vector<int64_t>{w.dilation[1], w.dilation[2]});
  ir::Value* planes = ctx.emit(
      kind, {reshape(ctx, x, {shape[0], shape[1] * shape[2], shape[3], shape[4]})}, planar);
  const int64_t height = planes->type().shape[2];
  const int64_t width = planes->type().shape[3];
  // [N, C, D, H' W'] -> [N * C, H' W', D]: depth last, pooled, moved back.
  ir::Value* depths = permute(
      ctx, reshape(ctx, planes, {shape[0] * shape[1], shape[2], height * width}), {0, 2, 1});
  ir::Value* pooled = poolLast(ctx, kind, depths, w, 0, extra);
  const int64_t depth = pooled->type().shape[2];
  ir::Value* y =
      reshape(ctx, permute(ctx, pooled, {0, 2, 1}), {shape[0], shape[1], depth, height, width});
  ctx.setOutput(0, unbatchedLike(ctx, y, input, 3));
}

// Fractional max pooling draws its pooling regions at random for each call.
void lowerFractionalMaxPool(LoweringContext& ctx) {
  ctx.unsupported(ctx.opName() +
                  " (its pooling regions are drawn at random on the host for "
                  "every call); use max_pool2d, or adaptive_avg_pool2d for a given output size");
}

} // namespace

void registerPooling(LoweringRegistry& registry) {
  registry.add("aten::fractional_max_pool2d", lowerFractionalMaxPool);
  registry.add("aten::fractional_max_pool3d", lowerFractionalMaxPool);
  registry.add("aten::max_pool1d", lowerPool1d<true>);
  registry.add("aten::avg_pool1d", lowerPool1d<false>);
  registry.add("aten::max_pool3d", lowerPool3d<true>);
  registry.add("aten::avg_pool3d", lowerPool3d<false>);
  registry.add("aten::max_pool2d", lowerMaxPool);
  registry.add("aten::avg_pool2d", lowerAvgPool);
  registry.add("aten::adaptive_avg_pool2d", lowerAdaptiveAvgPool);
}

} // namespace popsim::frontend::lowerings
