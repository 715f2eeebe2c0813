#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

namespace popsim::frontend::lowerings {
namespace {

// The arguments of a convolution, with spatial dimensions as PyTorch gives them.
struct Convolution {
  std::vector<int64_t> stride, padding, dilation, outputPadding;
  int64_t groups = 1;
  bool transposed = false;
};

// One value per spatial dimension: PyTorch lets a single value stand for all.
std::vector<int64_t> perDimension(const LoweringContext& ctx, std::vector<int64_t> values,
                                  size_t dims, const std::string& what) {
  if (values.size() == 1 && dims > 1) {
    values.assign(dims, values[0]);
  }
  if (values.size() != dims) {
    ctx.unsupported(what + " has " + std::to_string(values.size()) + " values for a " +
                    std::to_string(dims) + "-D convolution");
  }
  return values;
}

// A 1-D convolution runs as a 2-D one over a height of 1 (oneDNN's 2-D
// kernels are its best tuned): each spatial argument gets a leading entry
// (`height`) for that dimension.
std::vector<int64_t> withHeight(std::vector<int64_t> values, int64_t height) {
  values.insert(values.begin(), height);
  return values;
}

ir::Shape insertAt(ir::Shape shape, size_t at, int64_t size) {
  shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(at), size);
  return shape;
}

// Conv1d/2d/3d and ConvTranspose1d/2d/3d, batched or not, as a convolution
// or convolution_grad_input (a transposed convolution is the input gradient
// of the convolution it transposes) and a bias added per channel.
void lowerConvolution(LoweringContext& ctx, Convolution conv) {
  ir::Value* x = floatTensor(ctx, 0);
  ir::Value* weight = floatTensor(ctx, 1);
  const int64_t spatial = weight->type().rank() - 2;
  if (spatial < 1 || spatial > 3) {
    ctx.unsupported("a convolution weight of rank " + std::to_string(weight->type().rank()));
  }
  const auto dims = static_cast<size_t>(spatial);
  conv.stride = perDimension(ctx, conv.stride, dims, "stride");
  conv.padding = perDimension(ctx, conv.padding, dims, "padding");
  conv.dilation = perDimension(ctx, conv.dilation, dims, "dilation");
  conv.outputPadding = perDimension(ctx, conv.outputPadding, dims, "output_padding");
  const int64_t rank = x->type().rank();
  if (rank != spatial + 1 && rank != spatial + 2) {
    ctx.unsupported("a " + std::to_string(spatial) + "-D convolution of a " + x->type().str() +
                    " input (expected rank " + std::to_string(spatial + 1) + " or " +
                    std::to_string(spatial + 2) + ")");
  }
  // Batched, and 1-D as 2-D: [N, C, *spatial].
  ir::Shape shape = x->type().shape;
  if (rank == spatial + 1) shape = insertAt(shape, 0, 1); // unbatched
  if (spatial == 1) {
    shape = insertAt(shape, 2, 1);
    weight = reshape(ctx, weight, insertAt(weight->type().shape, 2, 1));
    conv.stride = withHeight(conv.stride, 1);
    conv.padding = withHeight(conv.padding, 0);
    conv.dilation = withHeight(conv.dilation, 1);
    conv.outputPadding = withHeight(conv.outputPadding, 0);
  }
  x = reshape(ctx, x, shape);
  ir::Attributes attrs = {{"stride", conv.stride},
                          {"padding", conv.padding},
                          {"dilation", conv.dilation},
                          {"groups", conv.groups}};
  ir::Value* bias = ctx.isNone(2) ? nullptr : floatTensor(ctx, 2);
  ir::Value* y = nullptr;
  if (!conv.transposed) {
    std::vector<ir::Value*> inputs = {x, weight};
    if (bias != nullptr) inputs.push_back(bias);
    y = ctx.emit(ir::OpKind::Convolution, inputs, std::move(attrs));
  } else {
    const ir::Shape& w = weight->type().shape; // [C_in, C_out / groups, *kernel]
    ir::Shape out = {shape[0], w[1] * conv.groups};
    for (size_t i = 0; i + 2 < shape.size(); ++i) {
      out.push_back((shape[2 + i] - 1) * conv.stride[i] - 2 * conv.padding[i] +
                    conv.dilation[i] * (w[2 + i] - 1) + conv.outputPadding[i] + 1);
      // PyTorch also allows output_padding up to the dilation; popsim's
      // transposed convolution is an input gradient, which needs it below
      // the stride.
      if (conv.outputPadding[i] >= conv.stride[i]) {
        ctx.unsupported("a transposed convolution with output_padding " +
                        std::to_string(conv.outputPadding[i]) + " not smaller than its stride " +
                        std::to_string(conv.stride[i]));
      }
    }
    attrs.set("input_shape", out);
    y = ctx.emit(ir::OpKind::ConvolutionGradInput, {x, weight}, std::move(attrs));
    if (bias != nullptr) {
      ir::Shape perChannelShape(shape.size() - 1, 1);
      perChannelShape[0] = bias->type().numel();
      ir::Value* perChannel = reshape(ctx, bias, perChannelShape);
      y = ctx.emit(ir::OpKind::Add, {y, perChannel}, {});
    }
  }
  // Back to the caller's layout: no height for 1-D, no batch when unbatched.
  ir::Shape result = y->type().shape;
  if (spatial == 1) result.erase(result.begin() + 2);
  if (rank == spatial + 1) result.erase(result.begin());
  ctx.setOutput(0, reshape(ctx, y, result));
}

// aten::_convolution(input, weight, bias, stride, padding, dilation, transposed,
//                    output_padding, groups, ...) and aten::convolution.
void lowerGenericConvolution(LoweringContext& ctx) {
  lowerConvolution(ctx, {ctx.toIntList(3), ctx.toIntList(4), ctx.toIntList(5), ctx.toIntList(7),
                         ctx.toInt(8), ctx.toBool(6)});
}

// The padding of aten::conv1d/2d/3d, which may be "valid" or "same".
std::vector<int64_t> explicitPadding(LoweringContext& ctx) {
  if (!ctx.isString(4)) {
    return ctx.toIntList(4);
  }
  const std::string mode = ctx.toString(4);
  const ir::Shape& kernel = ctx.tensor(1)->type().shape;
  const size_t dims = kernel.size() - 2;
  const std::vector<int64_t> dilation = perDimension(ctx, ctx.toIntList(5), dims, "dilation");
  std::vector<int64_t> padding;
  for (size_t i = 0; i < dims; ++i) {
    const int64_t total = mode == "valid" ? 0 : dilation[i] * (kernel[2 + i] - 1);
    if (total % 2 != 0) {
      ctx.unsupported("padding='same' needs asymmetric padding for this kernel and dilation");
    }
    padding.push_back(total / 2);
  }
  return padding;
}

// aten::conv1d/2d/3d(input, weight, bias, stride, padding, dilation, groups)
void lowerConvNd(LoweringContext& ctx) {
  lowerConvolution(
      ctx, {ctx.toIntList(3), explicitPadding(ctx), ctx.toIntList(5), {0}, ctx.toInt(6), false});
}

// aten::conv_transpose1d/2d/3d(input, weight, bias, stride, padding,
//                              output_padding, groups, dilation)
void lowerConvTransposeNd(LoweringContext& ctx) {
  lowerConvolution(ctx, {ctx.toIntList(3), ctx.toIntList(4), ctx.toIntList(7), ctx.toIntList(5),
                         ctx.toInt(6), true});
}

} // namespace

void registerConvolution(LoweringRegistry& registry) {
  registry.add("aten::_convolution", lowerGenericConvolution);
  registry.add("aten::convolution", lowerGenericConvolution);
  registry.add("aten::conv1d", lowerConvNd);
  registry.add("aten::conv2d", lowerConvNd);
  registry.add("aten::conv3d", lowerConvNd);
  registry.add("aten::conv_transpose1d", lowerConvTransposeNd);
  registry.add("aten::conv_transpose2d", lowerConvTransposeNd);
  registry.add("aten::conv_transpose3d", lowerConvTransposeNd);
}

} // namespace popsim::frontend::lowerings
