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
}

} // namespace popsim::ir::ops
