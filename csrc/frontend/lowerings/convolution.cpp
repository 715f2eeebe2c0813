#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

namespace popsim::frontend::lowerings {
namespace {

void lowerConv2d(LoweringContext& ctx, std::vector<int64_t> stride, std::vector<int64_t> padding,
                 std::vector<int64_t> dilation, int64_t groups) {
  ir::Value* x = floatTensor(ctx, 0);
  ir::Value* weight = floatTensor(ctx, 1);
  if (weight->type().rank() != 4) {
    ctx.unsupported("only 2-D convolutions are supported, but the weight " + weight->type().str() +
                    " has rank " + std::to_string(weight->type().rank()));
  }
  std::vector<ir::Value*> inputs = {x, weight};
  if (!ctx.isNone(2)) {
    inputs.push_back(floatTensor(ctx, 2));
  }
  // An unbatched [C, H, W] input runs as a batch of one.
  const bool unbatched = x->type().rank() == 3;
  if (unbatched) {
    ir::Shape batched = x->type().shape;
    batched.insert(batched.begin(), 1);
    inputs[0] = reshape(ctx, x, batched);
  }
  ir::Value* y = ctx.emit(ir::OpKind::Conv2d, inputs,
                          {{"stride", pair(ctx, stride, "stride")},
                           {"padding", pair(ctx, padding, "padding")},
                           {"dilation", pair(ctx, dilation, "dilation")},
                           {"groups", groups}});
  if (unbatched) {
    const ir::Shape& shape = y->type().shape;
    y = reshape(ctx, y, ir::Shape(shape.begin() + 1, shape.end()));
  }
  ctx.setOutput(0, y);
}

// aten::_convolution(input, weight, bias, stride, padding, dilation, transposed,
//                    output_padding, groups, ...) and aten::convolution.
void lowerConvolution(LoweringContext& ctx) {
  if (ctx.toBool(6)) {
    ctx.unsupported("transposed convolutions (ConvTranspose2d) are not supported");
  }
  lowerConv2d(ctx, ctx.toIntList(3), ctx.toIntList(4), ctx.toIntList(5), ctx.toInt(8));
}

// aten::conv2d(input, weight, bias, stride, padding, dilation, groups), where
// padding may be "valid" or "same".
void lowerConv2dOp(LoweringContext& ctx) {
  std::vector<int64_t> padding;
  if (!ctx.isString(4)) {
    padding = ctx.toIntList(4);
  } else {
    const std::string mode = ctx.toString(4);
    const std::vector<int64_t> dilation = pair(ctx, ctx.toIntList(5), "dilation");
    const ir::Shape& kernel = ctx.tensor(1)->type().shape;
    if (mode == "valid") {
      padding = {0, 0};
    } else {
      for (size_t i = 0; i < 2; ++i) {
        const int64_t total = dilation[i] * (kernel[2 + i] - 1);
        if (total % 2 != 0) {
          ctx.unsupported("padding='same' needs asymmetric padding for this kernel and dilation");
        }
        padding.push_back(total / 2);
      }
    }
  }
  lowerConv2d(ctx, ctx.toIntList(3), padding, ctx.toIntList(5), ctx.toInt(6));
}

} // namespace

void registerConvolution(LoweringRegistry& registry) {
  registry.add("aten::_convolution", lowerConvolution);
  registry.add("aten::convolution", lowerConvolution);
  registry.add("aten::conv2d", lowerConv2dOp);
}

} // namespace popsim::frontend::lowerings
