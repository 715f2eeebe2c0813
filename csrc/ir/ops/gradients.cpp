#include "ir/ops/convolution_types.h"
#include "ir/ops/op_registry.h"
#include "ir/ops/pooling_geometry.h"
#include "ir/ops/type_checks.h"

// Type rules of the ops the autodiff pass emits for gradients. Each takes the
// gradient of a forward op's output (dY) and what it needs of the forward
// computation, and returns the gradient of one forward input.
namespace popsim::ir::ops {
namespace {

// A tensor of `shape` with the dtype of `like` (gradients take their operands' dtype).
TensorType typed(const TensorType& like, Shape shape) { return {like.dtype, std::move(shape)}; }

void requireFloats(const std::vector<TensorType>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    requireFloat(inputs[i], "input " + std::to_string(i));
  }
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

// linear_grad_weight(dY[...,N], X[...,K]) -> dW[N,K]: the sum over leading
// dimensions of dY^T X.
std::vector<TensorType> inferLinearGradWeight(const std::vector<TensorType>& inputs,
                                              const Attributes&) {
  requireFloats(inputs);
  const TensorType& dy = inputs[0];
  const TensorType& x = inputs[1];
  requireMinRank(dy, 1, "input 0 (grad_output)");
  requireMinRank(x, 1, "input 1 (input)");
  POPSIM_CHECK(dy.numel() / dy.shape.back() == x.numel() / x.shape.back(), ErrorKind::Compilation,
               "grad_output ", dy.str(), " and input ", x.str(), " have different row counts.");
  return {typed(dy, {dy.shape.back(), x.shape.back()})};
}

// activation_grad(dY, ref): ref is the forward input (relu, gelu, abs) or
// output (sigmoid, tanh), as the activation attribute says.
std::vector<TensorType> inferActivationGrad(const std::vector<TensorType>& inputs,
                                            const Attributes& attrs) {
  requireFloats(inputs);
  const std::string& activation = attrs.getString("activation");
  POPSIM_CHECK(activation == "relu" || activation == "gelu" || activation == "gelu_tanh" ||
                   activation == "sigmoid" || activation == "tanh" || activation == "abs",
               ErrorKind::Compilation, "unknown activation \"", activation, "\".");
  requireShape(inputs[1], inputs[0].shape, "input 1 (reference)");
  return {inputs[0]};
}

// softmax_grad / log_softmax_grad(dY, Y) along dim.
std::vector<TensorType> inferSoftmaxGrad(const std::vector<TensorType>& inputs,
                                         const Attributes& attrs) {
  requireFloats(inputs);
  requireShape(inputs[1], inputs[0].shape, "input 1 (output)");
  const int64_t dim = attrs.getInt("dim");
  POPSIM_CHECK(dim >= 0 && dim < inputs[0].rank(), ErrorKind::Compilation, "dim ", dim,
               " is out of range for ", inputs[0].str(), ".");
  return {inputs[0]};
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

// batch_norm_grad(dY, X, weight, mean, var) -> (dX, dweight, dbias).
std::vector<TensorType> inferBatchNormGrad(const std::vector<TensorType>& inputs,
                                           const Attributes&) {
  requireFloats(inputs);
  requireShape(inputs[1], inputs[0].shape, "input 1 (input)");
  POPSIM_CHECK(inputs[0].rank() >= 2, ErrorKind::Compilation, "grad_output ", inputs[0].str(),
               " has no channel dimension.");
  const Shape channels = {inputs[0].shape[1]};
  for (size_t i = 2; i < 5; ++i) {
    requireShape(inputs[i], channels, "input " + std::to_string(i));
  }
  return {inputs[0], typed(inputs[2], channels), typed(inputs[2], channels)};
}

// layer_norm_grad(dY, X, weight, mean, var) -> (dX, dweight, dbias).
std::vector<TensorType> inferLayerNormGrad(const std::vector<TensorType>& inputs,
                                           const Attributes& attrs) {
  requireFloats(inputs);
  requireShape(inputs[1], inputs[0].shape, "input 1 (input)");
  const int64_t ndim = attrs.getInt("normalized_ndim");
  POPSIM_CHECK(ndim >= 1 && ndim <= inputs[0].rank(), ErrorKind::Compilation, "normalized_ndim ",
               ndim, " does not fit ", inputs[0].str(), ".");
  const Shape normalized(inputs[0].shape.end() - ndim, inputs[0].shape.end());
  const Shape rows(inputs[0].shape.begin(), inputs[0].shape.end() - ndim);
  requireShape(inputs[2], normalized, "input 2 (weight)");
  requireShape(inputs[3], rows, "input 3 (mean)");
  requireShape(inputs[4], rows, "input 4 (var)");
  return {inputs[0], typed(inputs[2], normalized), typed(inputs[2], normalized)};
}

// slice_grad(dY) -> zeros of input_shape with dY where the slice came from.
std::vector<TensorType> inferSliceGrad(const std::vector<TensorType>& inputs,
                                       const Attributes& attrs) {
  const Shape& shape = attrs.getInts("input_shape");
  const int64_t dim = attrs.getInt("dim");
  POPSIM_CHECK(static_cast<int64_t>(shape.size()) == inputs[0].rank() && dim >= 0 &&
                   dim < inputs[0].rank(),
               ErrorKind::Compilation, "input_shape ", shapeToString(shape),
               " does not fit grad_output ", inputs[0].str(), " at dim ", dim, ".");
  return {{inputs[0].dtype, shape}};
}

// embedding_grad(dY[..., D], indices[...]) -> dW[num_embeddings, D].
std::vector<TensorType> inferEmbeddingGrad(const std::vector<TensorType>& inputs,
                                           const Attributes& attrs) {
  requireFloat(inputs[0], "input 0 (grad_output)");
  POPSIM_CHECK(inputs[1].dtype == DType::Int64 || inputs[1].dtype == DType::Int32,
               ErrorKind::Compilation, "input 1 (indices) must be i64 or i32, got ",
               inputs[1].str(), ".");
  POPSIM_CHECK(inputs[0].rank() == inputs[1].rank() + 1, ErrorKind::Compilation, "grad_output ",
               inputs[0].str(), " does not match indices ", inputs[1].str(), ".");
  return {typed(inputs[0], {attrs.getInt("num_embeddings"), inputs[0].shape.back()})};
}

// broadcast(X) -> X broadcast to `shape` (NumPy rules).
std::vector<TensorType> inferBroadcast(const std::vector<TensorType>& inputs,
                                       const Attributes& attrs) {
  const Shape& shape = attrs.getInts("shape");
  auto broadcast = broadcastShapes(inputs[0].shape, shape);
  POPSIM_CHECK(broadcast.has_value() && *broadcast == shape, ErrorKind::Compilation,
               inputs[0].str(), " does not broadcast to ", shapeToString(shape), ".");
  return {{inputs[0].dtype, shape}};
}

const std::vector<AttrSpec> kConvAttrs = {{"stride", AttrType::Ints},
                                          {"padding", AttrType::Ints},
                                          {"dilation", AttrType::Ints},
                                          {"groups", AttrType::Int}};

std::vector<AttrSpec> with(std::vector<AttrSpec> attrs, AttrSpec extra) {
  attrs.push_back(std::move(extra));
  return attrs;
}

} // namespace

void registerGradientOps(OpRegistry& registry) {
  registry.add(OpKind::ConvolutionGradInput, 2, 2, {"grad_output", "weight"},
               with(kConvAttrs, {"input_shape", AttrType::Ints}), inferConvGradInput);
  registry.add(OpKind::ConvolutionGradWeight, 2, 2, {"input", "grad_output"},
               with(kConvAttrs, {"weight_shape", AttrType::Ints}), inferConvGradWeight);
  registry.add(OpKind::LinearGradWeight, 2, 2, {"grad_output", "input"}, {}, inferLinearGradWeight);
  registry.add(OpKind::ActivationGrad, 2, 2, {"grad_output", "reference"},
               {{"activation", AttrType::String}}, inferActivationGrad);
  for (OpKind kind : {OpKind::SoftmaxGrad, OpKind::LogSoftmaxGrad}) {
    registry.add(kind, 2, 2, {"grad_output", "output"}, {{"dim", AttrType::Int}}, inferSoftmaxGrad);
  }
  registry.add(OpKind::MaxPool2dGrad, 2, 2, {"grad_output", "indices"},
               {{"input_shape", AttrType::Ints}}, inferMaxPoolGrad);
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
  registry.add(OpKind::BatchNormGrad, 5, 5, {"grad_output", "input", "weight", "mean", "var"},
               {{"eps", AttrType::Float}}, inferBatchNormGrad);
  registry.add(OpKind::LayerNormGrad, 5, 5, {"grad_output", "input", "weight", "mean", "var"},
               {{"normalized_ndim", AttrType::Int}, {"eps", AttrType::Float}}, inferLayerNormGrad);
  registry.add(OpKind::SliceGrad, 1, 1, {"grad_output"},
               {{"input_shape", AttrType::Ints},
                {"dim", AttrType::Int},
                {"start", AttrType::Int},
                {"end", AttrType::Int},
                {"step", AttrType::Int}},
               inferSliceGrad);
  registry.add(OpKind::EmbeddingGrad, 2, 2, {"grad_output", "indices"},
               {{"num_embeddings", AttrType::Int}, {"padding_idx", AttrType::Int}},
               inferEmbeddingGrad);
  registry.add(OpKind::Broadcast, 1, 1, {"input"}, {{"shape", AttrType::Ints}}, inferBroadcast);
}

} // namespace popsim::ir::ops
