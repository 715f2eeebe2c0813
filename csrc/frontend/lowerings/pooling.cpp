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

} // namespace

void registerPooling(LoweringRegistry& registry) {
  registry.add("aten::max_pool2d", lowerMaxPool);
  registry.add("aten::avg_pool2d", lowerAvgPool);
  registry.add("aten::adaptive_avg_pool2d", lowerAdaptiveAvgPool);
}

} // namespace popsim::frontend::lowerings
