#include "ir/ops/gradient_helpers.h"
#include "ir/ops/op_registry.h"
#include "ir/ops/pooling_geometry.h"
#include "ir/ops/type_checks.h"

namespace popsim::ir::ops {
namespace {

// Shared by max_pool2d and avg_pool2d: input [N,C,H,W], kernel/stride/padding
// per spatial dimension, output size as torch computes it (ceil_mode too).
std::vector<TensorType> inferPool(const std::vector<TensorType>& inputs, const Attributes& attrs,
                                  const std::vector<int64_t>& dilation) {
  const TensorType& x = inputs[0];
  requireRank(x, 4, "input 0 (input)");
  requireFloat(x, "input 0 (input)");
  const auto& kernel = attrs.getInts("kernel");
  const auto& stride = attrs.getInts("stride");
  const auto& padding = attrs.getInts("padding");
  requireLength(kernel, 2, "kernel");
  requireLength(stride, 2, "stride");
  requireLength(padding, 2, "padding");
  Shape out = x.shape;
  for (size_t i = 0; i < 2; ++i) {
    POPSIM_CHECK(kernel[i] >= 1 && stride[i] >= 1 && dilation[i] >= 1, ErrorKind::Compilation,
                 "kernel, stride and dilation must be >= 1, got kernel ", listToString(kernel),
                 ", stride ", listToString(stride), ", dilation ", listToString(dilation), ".");
    POPSIM_CHECK(padding[i] >= 0 && padding[i] <= kernel[i] / 2, ErrorKind::Compilation,
                 "padding must be between 0 and half the kernel size, got padding ",
                 listToString(padding), " for kernel ", listToString(kernel), ".");
    out[2 + i] = pooledSize(x.shape[2 + i], kernel[i], stride[i], padding[i], dilation[i],
                            attrs.getBool("ceil_mode"));
    POPSIM_CHECK(out[2 + i] >= 1, ErrorKind::Compilation, "the input ", x.str(),
                 " is too small for kernel ", listToString(kernel), " (output would be empty).");
  }
  return {{x.dtype, out}};
}

std::vector<TensorType> inferMaxPool(const std::vector<TensorType>& inputs,
                                     const Attributes& attrs) {
  const auto& dilation = attrs.getInts("dilation");
  requireLength(dilation, 2, "dilation");
  return inferPool(inputs, attrs, dilation);
}

// max_pool2d_train(X) -> (Y, indices): Y as max_pool2d, and where each
// window's maximum is: PyTorch's flat position in the input plane (the
// first maximum, the last NaN), which max_pool2d_grad reads and
// max_pool*d(return_indices=True) returns, so every kernel must record it.
std::vector<TensorType> inferMaxPoolTrain(const std::vector<TensorType>& inputs,
                                          const Attributes& attrs) {
  const TensorType y = inferMaxPool(inputs, attrs)[0];
  return {y, {DType::Int32, y.shape}};
}

std::vector<TensorType> inferAvgPool(const std::vector<TensorType>& inputs,
                                     const Attributes& attrs) {
  POPSIM_CHECK(attrs.getInt("divisor_override") >= 0, ErrorKind::Compilation,
               "divisor_override must be positive (0 means none), got ",
               attrs.getInt("divisor_override"), ".");
  return inferPool(inputs, attrs, {1, 1});
}

std::vector<TensorType> inferAdaptiveAvgPool(const std::vector<TensorType>& inputs,
                                             const Attributes& attrs) {
  const TensorType& x = inputs[0];
  requireRank(x, 4, "input 0 (input)");
  requireFloat(x, "input 0 (input)");
  const auto& size = attrs.getInts("output_size");
  requireLength(size, 2, "output_size");
  POPSIM_CHECK(size[0] >= 1 && size[1] >= 1, ErrorKind::Compilation,
               "output_size must be positive, got ", listToString(size), ".");
  return {{x.dtype, {x.shape[0], x.shape[1], size[0], size[1]}}};
}

// adaptive_max_pool2d(X) -> (Y, indices): each adaptive bin's maximum and
// its flat position in the input plane (the encoding max_pool2d_grad reads).
std::vector<TensorType> inferAdaptiveMaxPool(const std::vector<TensorType>& inputs,
                                             const Attributes& attrs) {
  const TensorType y = inferAdaptiveAvgPool(inputs, attrs)[0];
  return {y, {DType::Int32, y.shape}};
}

// max_pool2d_grad(dY, indices) -> dX of input_shape: each dY element goes to
// the position max_pool2d_train recorded for its window.
std::vector<TensorType> inferMaxPoolGrad(const std::vector<TensorType>& inputs,
                                         const Attributes& attrs) {
  requireFloat(inputs[0], "input 0 (grad_output)");
  requireRank(inputs[0], 4, "input 0 (grad_output)");
  requireDType(inputs[1], DType::Int32, "input 1 (indices)");
  requireShape(inputs[1], inputs[0].shape, "input 1 (indices)");
  const Shape& shape = attrs.getInts("input_shape");
  requireLength(shape, 4, "input_shape");
  return {typed(inputs[0], shape)};
}

// avg_pool2d_grad(dY) / adaptive_avg_pool2d_grad(dY) -> dX of input_shape.
std::vector<TensorType> inferPoolGradToShape(const std::vector<TensorType>& inputs,
                                             const Attributes& attrs) {
  requireFloats(inputs);
  requireRank(inputs[0], 4, "input 0 (grad_output)");
  const Shape& shape = attrs.getInts("input_shape");
  requireLength(shape, 4, "input_shape");
  return {typed(inputs[0], shape)};
}

// Whether two of a max pooling's windows can share an input element (then
// its gradient may sum two of dY's values): max_pool2d's windows when the
// stride is shorter than the dilated kernel in a dimension (padding and
// ceil_mode only add windows further along), adaptive_max_pool2d's when an
// output size does not divide the input's.
bool windowsOverlap(const Node& forward) {
  const Shape& input = forward.input(0)->type().shape;
  const Shape& output = forward.output(0)->type().shape;
  if (forward.kind() == OpKind::AdaptiveMaxPool2d) {
    return input[2] % output[2] != 0 || input[3] % output[3] != 0;
  }
  const Shape& kernel = forward.attrs().getInts("kernel");
  const Shape& stride = forward.attrs().getInts("stride");
  const Shape& dilation = forward.attrs().getInts("dilation");
  for (size_t d = 0; d < 2; ++d) {
    if (stride[d] < dilation[d] * (kernel[d] - 1) + 1) return true;
  }
  return false;
}

// max_pool2d_train and adaptive_max_pool2d: dY added at the recorded maxima.
Grads maxPoolGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  POPSIM_ASSERT(g[1] == nullptr, "max pooling indices reach the loss.");
  return {b.emit(
      OpKind::MaxPool2dGrad, {g[0], out(b, 1)},
      {{"input_shape", in(b, 0)->type().shape}, {"windows_overlap", windowsOverlap(b.forward())}})};
}

Grads avgPoolGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  Attributes a = copyAttrs(nodeOf(b).attrs(), {"kernel", "stride", "padding", "ceil_mode",
                                               "count_include_pad", "divisor_override"});
  a.set("input_shape", in(b, 0)->type().shape);
  return {b.emit(OpKind::AvgPool2dGrad, {g[0]}, a)};
}

Grads adaptiveAvgPoolGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  return {b.emit(OpKind::AdaptiveAvgPool2dGrad, {g[0]}, {{"input_shape", in(b, 0)->type().shape}})};
}

// Pooling over windows: the input is exchanged to the tiles of its windows,
// then a vectorised pass per window tap over the output (float32 vector
// width).
OpWork windowWork(const Node& node) {
  const auto& kernel = node.attrs().getInts("kernel");
  OpWork work;
  work.exchangedBytes = node.input(0)->type().bytes();
  work.vectorPasses = 1;
  work.vectorElements =
      static_cast<uint64_t>(node.output()->type().numel() * kernel[0] * kernel[1]);
  return work;
}

// Adaptive pooling: the input exchanged, then a pass over all of it.
OpWork adaptiveWork(const Node& node) {
  OpWork work;
  work.exchangedBytes = node.input(0)->type().bytes();
  work.vectorPasses = 1;
  work.vectorElements = static_cast<uint64_t>(node.input(0)->type().numel());
  return work;
}

// max_pool2d_grad is a scatter: clear dX, then one add per dY element.
OpWork maxPoolGradWork(const Node& node) {
  OpWork work;
  for (const Value* input : node.inputs())
    work.exchangedBytes += input->type().bytes();
  work.vectorPasses = 1;
  work.vectorElements =
      static_cast<uint64_t>(node.output()->type().numel() + node.input(0)->type().numel());
  return work;
}

} // namespace

void registerPoolingOps(OpRegistry& registry) {
  registry.add(OpKind::MaxPool2d, 1, 1, {"input"},
               {{"kernel", AttrType::Ints},
                {"stride", AttrType::Ints},
                {"padding", AttrType::Ints},
                {"dilation", AttrType::Ints},
                {"ceil_mode", AttrType::Bool}},
               inferMaxPool);
  registry.add(OpKind::MaxPool2dTrain, 1, 1, {"input"},
               {{"kernel", AttrType::Ints},
                {"stride", AttrType::Ints},
                {"padding", AttrType::Ints},
                {"dilation", AttrType::Ints},
                {"ceil_mode", AttrType::Bool}},
               inferMaxPoolTrain);
  registry.add(OpKind::AvgPool2d, 1, 1, {"input"},
               {{"kernel", AttrType::Ints},
                {"stride", AttrType::Ints},
                {"padding", AttrType::Ints},
                {"ceil_mode", AttrType::Bool},
                {"count_include_pad", AttrType::Bool},
                {"divisor_override", AttrType::Int}},
               inferAvgPool);
  registry.add(OpKind::AdaptiveAvgPool2d, 1, 1, {"input"}, {{"output_size", AttrType::Ints}},
               inferAdaptiveAvgPool);
  registry.add(OpKind::AdaptiveMaxPool2d, 1, 1, {"input"}, {{"output_size", AttrType::Ints}},
               inferAdaptiveMaxPool);
  registry.add(OpKind::MaxPool2dGrad, 2, 2, {"grad_output", "indices"},
               {{"input_shape", AttrType::Ints}, {"windows_overlap", AttrType::Bool, true}},
               inferMaxPoolGrad);
  registry.add(OpKind::AvgPool2dGrad, 1, 1, {"grad_output"},
               {{"kernel", AttrType::Ints},
                {"stride", AttrType::Ints},
                {"padding", AttrType::Ints},
                {"ceil_mode", AttrType::Bool},
                {"count_include_pad", AttrType::Bool},
                {"divisor_override", AttrType::Int},
                {"input_shape", AttrType::Ints}},
               inferPoolGradToShape);
  registry.add(OpKind::AdaptiveAvgPool2dGrad, 1, 1, {"grad_output"},
               {{"input_shape", AttrType::Ints}}, inferPoolGradToShape);
  registry.setGradient(OpKind::MaxPool2dTrain, maxPoolGradient);
  registry.setGradient(OpKind::AdaptiveMaxPool2d, maxPoolGradient);
  registry.setGradient(OpKind::AvgPool2d, avgPoolGradient);
  registry.setGradient(OpKind::AdaptiveAvgPool2d, adaptiveAvgPoolGradient);
  registry.setWork(OpKind::MaxPool2d, windowWork);
  registry.setWork(OpKind::MaxPool2dTrain, windowWork);
  registry.setWork(OpKind::AvgPool2d, windowWork);
  registry.setWork(OpKind::AvgPool2dGrad, windowWork);
  registry.setWork(OpKind::MaxPool2dGrad, maxPoolGradWork);
  registry.setWork(OpKind::AdaptiveAvgPool2d, adaptiveWork);
  registry.setWork(OpKind::AdaptiveMaxPool2d, adaptiveWork);
  registry.setWork(OpKind::AdaptiveAvgPool2dGrad, work::elementwise<1>);
  // Each output is its window's largest input; each element of the gradient
  // is one element of dY or zero, unless windows overlap (or may: the
  // attribute is absent).
  registry.setSelectsInputValues(OpKind::MaxPool2d);
  registry.setSelectsInputValues(OpKind::MaxPool2dTrain);
  registry.setSelectsInputValues(OpKind::MaxPool2dGrad, [](const Node& node) {
    const AttrValue* overlap = node.attrs().find("windows_overlap");
    return overlap != nullptr && !std::get<bool>(*overlap);
  });
}

} // namespace popsim::ir::ops
