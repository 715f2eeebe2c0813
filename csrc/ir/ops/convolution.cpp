#include "ir/ops/gradient_helpers.h"
#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"
#include "ir/partials.h"

namespace popsim::ir::ops {
namespace {

// convolution(input[N, C, *spatial], weight[OC, C / groups, *kernel], bias[OC]?)
// as torch.nn.functional.conv1d/2d/3d: 1 to 3 spatial dimensions, with one
// stride, padding and dilation per spatial dimension.
std::vector<TensorType> inferConvolution(const std::vector<TensorType>& inputs,
                                         const Attributes& attrs) {
  const TensorType& x = inputs[0];
  const TensorType& w = inputs[1];
  POPSIM_CHECK(x.rank() >= 3 && x.rank() <= 5, ErrorKind::Compilation,
               "input 0 (input) must have 3 to 5 dimensions (batch, channels and 1 to 3 spatial "
               "ones), got ",
               x.rank(), " (", x.str(), ").");
  requireRank(w, x.rank(), "input 1 (weight)");
  requireFloat(x, "input 0 (input)");
  requireFloat(w, "input 1 (weight)");
  const auto spatial = static_cast<size_t>(x.rank() - 2);
  const auto& stride = attrs.getInts("stride");
  const auto& padding = attrs.getInts("padding");
  const auto& dilation = attrs.getInts("dilation");
  requireLength(stride, spatial, "stride");
  requireLength(padding, spatial, "padding");
  requireLength(dilation, spatial, "dilation");
  const int64_t groups = attrs.getInt("groups");
  POPSIM_CHECK(groups >= 1, ErrorKind::Compilation, "groups must be at least 1, got ", groups, ".");
  const int64_t channels = x.shape[1];
  const int64_t outChannels = w.shape[0];
  POPSIM_CHECK(channels % groups == 0 && outChannels % groups == 0, ErrorKind::Compilation,
               "input channels (", channels, ") and output channels (", outChannels,
               ") must be divisible by groups (", groups, ").");
  POPSIM_CHECK(w.shape[1] * groups == channels, ErrorKind::Compilation, "weight ", w.str(),
               " expects ", w.shape[1] * groups, " input channels, but the input ", x.str(),
               " has ", channels, ".");
  if (inputs.size() == 3) {
    requireFloat(inputs[2], "input 2 (bias)");
    requireShape(inputs[2], {outChannels}, "input 2 (bias)");
  }
  Shape out = {x.shape[0], outChannels};
  for (size_t i = 0; i < spatial; ++i) {
    POPSIM_CHECK(stride[i] >= 1 && dilation[i] >= 1 && padding[i] >= 0, ErrorKind::Compilation,
                 "stride and dilation must be >= 1 and padding >= 0, got stride ",
                 listToString(stride), ", dilation ", listToString(dilation), ", padding ",
                 listToString(padding), ".");
    const int64_t span = dilation[i] * (w.shape[2 + i] - 1) + 1;
    const int64_t padded = x.shape[2 + i] + 2 * padding[i];
    POPSIM_CHECK(padded >= span, ErrorKind::Compilation, "the kernel (", span,
                 " wide with dilation) is larger than the padded input (", padded,
                 ") in spatial dimension ", i, ".");
    out.push_back((padded - span) / stride[i] + 1);
  }
  return {{x.dtype, out}};
}

// convolution_grad_input(dY[N, OC, *out], weight) -> dX of shape input_shape:
// the convolution of an input of that shape must give dY's shape (transposed
// convolutions lower to this op, so users reach this check).
std::vector<TensorType> inferConvGradInput(const std::vector<TensorType>& inputs,
                                           const Attributes& attrs) {
  requireFloats(inputs);
  const TensorType& dy = inputs[0];
  const TensorType& w = inputs[1];
  const Shape& shape = attrs.getInts("input_shape");
  requireLength(shape, static_cast<size_t>(dy.rank()), "input_shape");
  const TensorType forward = inferConvolution({typed(w, shape), w}, attrs)[0];
  POPSIM_CHECK(forward.shape == dy.shape, ErrorKind::Compilation, "input_shape ",
               shapeToString(shape), " convolves with weight ", w.str(), " to ", forward.str(),
               ", not to grad_output ", dy.str(), ".");
  return {typed(dy, shape)};
}

// convolution_grad_weight(X, dY) -> dW of shape weight_shape.
std::vector<TensorType> inferConvGradWeight(const std::vector<TensorType>& inputs,
                                            const Attributes& attrs) {
  requireFloats(inputs);
  const Shape& shape = attrs.getInts("weight_shape");
  const TensorType forward = inferConvolution({inputs[0], typed(inputs[0], shape)}, attrs)[0];
  POPSIM_CHECK(forward.shape == inputs[1].shape, ErrorKind::Compilation, "input ", inputs[0].str(),
               " convolves with a weight of weight_shape ", shapeToString(shape), " to ",
               forward.str(), ", not to grad_output ", inputs[1].str(), ".");
  return {typed(inputs[0], shape)};
}

// The attributes a convolution's gradients share with it: its geometry, and
// the partials type when the user set one for it.
Attributes convolutionAttrs(const Attributes& attrs) {
  Attributes shared = copyAttrs(attrs, {"stride", "padding", "dilation", "groups"});
  if (const AttrValue* half = attrs.find(kHalfPartials))
    shared.set(std::string(kHalfPartials), *half);
  return shared;
}

Grads convolutionGradient(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  const Attributes& attrs = nodeOf(b).attrs();
  if (needed[0]) {
    Attributes a = convolutionAttrs(attrs);
    a.set("input_shape", in(b, 0)->type().shape);
    result[0] = b.emit(OpKind::ConvolutionGradInput, {g[0], in(b, 1)}, a);
  }
  if (needed[1]) {
    Attributes a = convolutionAttrs(attrs);
    a.set("weight_shape", in(b, 1)->type().shape);
    result[1] = b.emit(OpKind::ConvolutionGradWeight, {in(b, 0), g[0]}, a);
  }
  if (result.size() == 3 && needed[2]) {
    result[2] = b.emit(OpKind::ReduceSum, {g[0]},
                       {{"dims", allDimsExcept(g[0]->type().rank(), 1)}, {"keepdim", false}});
  }
  return result;
}

// A transposed convolution is convolution_grad_input(x, w): its input's gradient
// is the forward convolution of the output's, its weight's the weight
// gradient of that convolution.
Grads convolutionGradInputGradient(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  const Attributes a = convolutionAttrs(nodeOf(b).attrs());
  if (needed[0]) {
    result[0] = b.emit(OpKind::Convolution, {g[0], in(b, 1)}, a);
  }
  if (needed[1]) {
    Attributes weight = a;
    weight.set("weight_shape", in(b, 1)->type().shape);
    result[1] = b.emit(OpKind::ConvolutionGradWeight, {g[0], in(b, 0)}, weight);
  }
  return result;
}

// Every element of the convolution's output pairs with every tap of its
// window over the input channels of its group; the two gradients do as many
// multiply-accumulates (each pairs every output-gradient element with every
// tap). The tiles exchange the operand blocks of its product.
OpWork convolutionWork(const Node& node) {
  const bool weightGradient = node.kind() == OpKind::ConvolutionGradWeight;
  const TensorType& out = node.output()->type();
  const Shape& w = weightGradient ? out.shape : node.input(1)->type().shape;
  const TensorType& convOutput =
      node.kind() == OpKind::Convolution ? out : node.input(weightGradient ? 1 : 0)->type();
  OpWork work;
  // The implicit matrix product of each group: output positions (batch x
  // spatial) x taps (input channels of the group x window) x output
  // channels of the group; the input gradient sums over the output
  // channels for each tap, the weight gradient over the output positions.
  const auto groups = static_cast<uint64_t>(node.attrs().getInt("groups"));
  const auto outChannels = static_cast<uint64_t>(w[0]) / groups;
  const auto taps = static_cast<uint64_t>(elementCount(w) / w[0]);
  const auto positions = static_cast<uint64_t>(convOutput.numel() / convOutput.shape[1]);
  OpWork::Product& product = work.product;
  switch (node.kind()) {
  case OpKind::Convolution: product = {groups, positions, taps, outChannels}; break;
  case OpKind::ConvolutionGradWeight: product = {groups, outChannels, positions, taps}; break;
  default: product = {groups, positions, outChannels, taps}; // the input's gradient
  }
  work.macs = static_cast<uint64_t>(convOutput.numel() * (elementCount(w) / w[0]));
  work.macType = node.input(0)->type().dtype;
  return work;
}

} // namespace

void registerConvolutionOps(OpRegistry& registry) {
  // half_partials (optional): the partials type popsim.MultiConv gives this
  // convolution and its gradients (ir/partials.h); without it
  // Precision.setPartialsType decides.
  const std::vector<AttrSpec> convAttrs = {{"stride", AttrType::Ints},
                                           {"padding", AttrType::Ints},
                                           {"dilation", AttrType::Ints},
                                           {"groups", AttrType::Int},
                                           {std::string(kHalfPartials), AttrType::Bool, true}};
  const auto with = [&](AttrSpec extra) {
    std::vector<AttrSpec> attrs = convAttrs;
    attrs.push_back(std::move(extra));
    return attrs;
  };
  registry.add(OpKind::Convolution, 2, 3, {"input", "weight", "bias"}, convAttrs, inferConvolution);
  registry.add(OpKind::ConvolutionGradInput, 2, 2, {"grad_output", "weight"},
               with({"input_shape", AttrType::Ints}), inferConvGradInput);
  registry.add(OpKind::ConvolutionGradWeight, 2, 2, {"input", "grad_output"},
               with({"weight_shape", AttrType::Ints}), inferConvGradWeight);
  registry.setGradient(OpKind::Convolution, convolutionGradient);
  registry.setGradient(OpKind::ConvolutionGradInput, convolutionGradInputGradient);
  registry.setWork(OpKind::Convolution, convolutionWork);
  registry.setWork(OpKind::ConvolutionGradInput, convolutionWork);
  registry.setWork(OpKind::ConvolutionGradWeight, convolutionWork);
  registry.setPlannedTemporaries(OpKind::Convolution);
  registry.setPlannedTemporaries(OpKind::ConvolutionGradInput);
  registry.setPlannedTemporaries(OpKind::ConvolutionGradWeight);
}

} // namespace popsim::ir::ops
