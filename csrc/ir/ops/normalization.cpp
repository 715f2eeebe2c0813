#include "ir/ops/gradient_helpers.h"
#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

namespace popsim::ir::ops {
namespace {

// batch_norm(input[N,C,...], running_mean[C], running_var[C], weight[C], bias[C])
// in inference form: normalises with the running statistics.
std::vector<TensorType> inferBatchNorm(const std::vector<TensorType>& inputs,
                                       const Attributes& attrs) {
  const TensorType& x = inputs[0];
  requireFloat(x, "input 0 (input)");
  POPSIM_CHECK(x.rank() >= 2 && x.rank() <= 5, ErrorKind::Compilation,
               "input 0 (input) must have 2 to 5 dimensions, got ", x.str(), ".");
  const Shape channels = {x.shape[1]};
  const OpSchema& schema = opSchema(OpKind::BatchNorm);
  for (size_t i = 1; i < inputs.size(); ++i) {
    requireFloat(inputs[i], schema.inputName(i));
    requireShape(inputs[i], channels, schema.inputName(i));
  }
  POPSIM_CHECK(attrs.getFloat("eps") >= 0, ErrorKind::Compilation, "eps must be >= 0.");
  return {x};
}

// layer_norm(input[..., D...], weight[D...], bias[D...]) over the last
// `normalized_ndim` dimensions.
std::vector<TensorType> inferLayerNorm(const std::vector<TensorType>& inputs,
                                       const Attributes& attrs) {
  const TensorType& x = inputs[0];
  requireFloat(x, "input 0 (input)");
  const int64_t ndim = attrs.getInt("normalized_ndim");
  POPSIM_CHECK(ndim >= 1 && ndim <= x.rank(), ErrorKind::Compilation, "normalized_ndim ", ndim,
               " must be between 1 and the input rank ", x.rank(), ".");
  const Shape normalized(x.shape.end() - ndim, x.shape.end());
  const OpSchema& schema = opSchema(OpKind::LayerNorm);
  for (size_t i = 1; i < inputs.size(); ++i) {
    requireFloat(inputs[i], schema.inputName(i));
    requireShape(inputs[i], normalized, schema.inputName(i));
  }
  POPSIM_CHECK(attrs.getFloat("eps") >= 0, ErrorKind::Compilation, "eps must be >= 0.");
  return {x};
}

// The statistics of a normalisation: float32 whatever the input's dtype.
TensorType f32(Shape shape) { return {DType::Float32, std::move(shape)}; }

// batch_norm_train(X[N,C,...], weight[C], bias[C]) -> (Y, mean[C], var[C]):
// normalises with the batch's statistics (biased variance), as PyTorch does in
// training mode; the running statistics are updated by separate ops.
std::vector<TensorType> inferBatchNormTrain(const std::vector<TensorType>& inputs,
                                            const Attributes& attrs) {
  const TensorType& x = inputs[0];
  requireFloat(x, "input 0 (input)");
  POPSIM_CHECK(x.rank() >= 2 && x.rank() <= 5, ErrorKind::Compilation,
               "input 0 (input) must have 2 to 5 dimensions, got ", x.str(), ".");
  const Shape channels = {x.shape[1]};
  requireShape(inputs[1], channels, "input 1 (weight)");
  requireShape(inputs[2], channels, "input 2 (bias)");
  POPSIM_CHECK(x.numel() / x.shape[1] > 1, ErrorKind::Compilation,
               "batch_norm in training needs more than one value per channel, got ", x.str(), ".");
  POPSIM_CHECK(attrs.getFloat("eps") >= 0, ErrorKind::Compilation, "eps must be >= 0.");
  return {x, f32(channels), f32(channels)};
}

// layer_norm_train(X, weight, bias) -> (Y, mean, var): Y as layer_norm, and
// the statistics per row (the leading dimensions), kept for the gradient.
std::vector<TensorType> inferLayerNormTrain(const std::vector<TensorType>& inputs,
                                            const Attributes& attrs) {
  const TensorType y = opSchema(OpKind::LayerNorm).inferTypes(inputs, attrs)[0];
  const int64_t ndim = attrs.getInt("normalized_ndim");
  const Shape rows(y.shape.begin(), y.shape.end() - ndim);
  return {y, f32(rows), f32(rows)};
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

// Inference batch norm (running statistics) in a training graph, e.g. frozen
// batch norm: y = (x - mean) * w / sqrt(var + eps) + b per channel.
Grads batchNormEvalGradient(GradientBuilder& b, const Grads& g, const Needed& needed) {
  Grads result = none(b);
  Value* dy = g[0];
  const ir::Shape& shape = in(b, 0)->type().shape;
  ir::Shape channelShape(shape.size(), 1);
  channelShape[1] = shape[1];
  const double eps = nodeOf(b).attrs().getFloat("eps");
  // float32 running statistics of a float16 layer (runningStatisticsAlwaysFloat)
  // enter its gradient in the layer's dtype.
  const ir::DType dtype = in(b, 0)->type().dtype;
  Value* mean = asDType(b, in(b, 1), dtype);
  Value* stdev = b.emit(OpKind::Sqrt, {b.affine(asDType(b, in(b, 2), dtype), 1.0, eps)});
  const std::vector<int64_t> reduce = allDimsExcept(dy->type().rank(), 1);
  if (needed[0]) {
    Value* scale =
        b.reshape(b.emit(OpKind::Div, {asDType(b, in(b, 3), dtype), stdev}), channelShape);
    result[0] = b.emit(OpKind::Mul, {dy, scale});
  }
  if (needed[3]) {
    Value* centered = b.emit(OpKind::Sub, {in(b, 0), b.reshape(mean, channelShape)});
    Value* xhat = b.emit(OpKind::Div, {centered, b.reshape(stdev, channelShape)});
    result[3] = b.emit(OpKind::ReduceSum, {b.emit(OpKind::Mul, {dy, xhat})},
                       {{"dims", reduce}, {"keepdim", false}});
  }
  if (needed[4]) {
    result[4] = b.emit(OpKind::ReduceSum, {dy}, {{"dims", reduce}, {"keepdim", false}});
  }
  return result;
}

// batch_norm_train / layer_norm_train -> one fused gradient op for (dx, dw, db).
Grads normalizationTrainGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  POPSIM_ASSERT(g[1] == nullptr && g[2] == nullptr, "normalisation statistics reach the loss.");
  const bool batch = nodeOf(b).kind() == OpKind::BatchNormTrain;
  const std::vector<Value*> grads =
      b.emitMulti(batch ? OpKind::BatchNormGrad : OpKind::LayerNormGrad,
                  {g[0], in(b, 0), in(b, 1), out(b, 1), out(b, 2)},
                  batch ? copyAttrs(nodeOf(b).attrs(), {"eps"})
                        : copyAttrs(nodeOf(b).attrs(), {"normalized_ndim", "eps"}));
  return {grads[0], grads[1], grads[2]};
}

} // namespace

void registerNormalizationOps(OpRegistry& registry) {
  registry.add(OpKind::BatchNorm, 5, 5, {"input", "running_mean", "running_var", "weight", "bias"},
               {{"eps", AttrType::Float}}, inferBatchNorm);
  registry.add(OpKind::LayerNorm, 3, 3, {"input", "weight", "bias"},
               {{"normalized_ndim", AttrType::Int}, {"eps", AttrType::Float}}, inferLayerNorm);
  registry.add(OpKind::BatchNormTrain, 3, 3, {"input", "weight", "bias"},
               {{"eps", AttrType::Float}}, inferBatchNormTrain);
  registry.add(OpKind::LayerNormTrain, 3, 3, {"input", "weight", "bias"},
               {{"normalized_ndim", AttrType::Int}, {"eps", AttrType::Float}}, inferLayerNormTrain);
  registry.add(OpKind::BatchNormGrad, 5, 5, {"grad_output", "input", "weight", "mean", "var"},
               {{"eps", AttrType::Float}}, inferBatchNormGrad);
  registry.add(OpKind::LayerNormGrad, 5, 5, {"grad_output", "input", "weight", "mean", "var"},
               {{"normalized_ndim", AttrType::Int}, {"eps", AttrType::Float}}, inferLayerNormGrad);
  registry.setGradient(OpKind::BatchNorm, batchNormEvalGradient);
  registry.setGradient(OpKind::BatchNormTrain, normalizationTrainGradient);
  registry.setGradient(OpKind::LayerNormTrain, normalizationTrainGradient);
  registry.setWork(OpKind::BatchNorm, work::reduction<2>);
  registry.setWork(OpKind::LayerNorm, work::reduction<4>);
  registry.setWork(OpKind::BatchNormTrain, work::reduction<4>);
  registry.setWork(OpKind::LayerNormTrain, work::reduction<4>);
  registry.setWork(OpKind::BatchNormGrad, work::reduction<6>);
  registry.setWork(OpKind::LayerNormGrad, work::reduction<6>);
}

} // namespace popsim::ir::ops
