#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

// Type rules of forward ops that only training programs use: normalisation
// with batch statistics, dropout and the negative log-likelihood loss.
namespace popsim::ir::ops {
namespace {

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

// dropout(X, counter) -> (Y, mask): mask holds 0 or 1/(1-p) per element,
// drawn from (seed, stream, counter, element index); Y = X * mask.
std::vector<TensorType> inferDropout(const std::vector<TensorType>& inputs,
                                     const Attributes& attrs) {
  requireFloat(inputs[0], "input 0 (input)");
  requireDType(inputs[1], DType::Int64, "input 1 (counter)");
  requireRank(inputs[1], 0, "input 1 (counter)");
  const double p = attrs.getFloat("p");
  POPSIM_CHECK(p >= 0.0 && p < 1.0, ErrorKind::Compilation,
               "dropout probability must be in [0, 1), got ", p, ".");
  return {inputs[0], inputs[0]};
}

void checkReduction(const std::string& reduction) {
  POPSIM_CHECK(reduction == "mean" || reduction == "sum" || reduction == "none",
               ErrorKind::Compilation, "reduction must be \"mean\", \"sum\" or \"none\", got \"",
               reduction, "\".");
}

void checkTarget(const TensorType& logProbs, const TensorType& target) {
  requireFloat(logProbs, "input 0 (log_probs)");
  requireRank(logProbs, 2, "input 0 (log_probs)");
  requireDType(target, DType::Int64, "input 1 (target)");
  requireShape(target, {logProbs.shape[0]}, "input 1 (target)");
}

// The optional class weights of nll_loss and its gradient: float32 [C].
void checkClassWeights(const std::vector<TensorType>& inputs, int64_t classes) {
  if (inputs.size() < 3) return;
  requireFloat(inputs[2], "input 2 (weight)");
  requireShape(inputs[2], {classes}, "input 2 (weight)");
}

// nll_loss(log_probs[N,C], target[N], weight[C]?) -> loss: -weight[target[i]]
// * log_probs[i, target[i]] (weight 1 when absent), averaged over the
// weights of the targets that are not ignore_index, summed, or per sample.
std::vector<TensorType> inferNllLoss(const std::vector<TensorType>& inputs,
                                     const Attributes& attrs) {
  checkTarget(inputs[0], inputs[1]);
  checkClassWeights(inputs, inputs[0].shape[1]);
  const std::string& reduction = attrs.getString("reduction");
  checkReduction(reduction);
  const DType dtype = inputs[0].dtype;
  if (reduction == "none") {
    return {{dtype, {inputs[0].shape[0]}}};
  }
  return {{dtype, {}}};
}

// nll_loss_grad(dLoss, target, weight?) -> dLogProbs[N, num_classes].
std::vector<TensorType> inferNllLossGrad(const std::vector<TensorType>& inputs,
                                         const Attributes& attrs) {
  requireFloat(inputs[0], "input 0 (grad_loss)");
  requireDType(inputs[1], DType::Int64, "input 1 (target)");
  requireRank(inputs[1], 1, "input 1 (target)");
  checkReduction(attrs.getString("reduction"));
  checkClassWeights(inputs, attrs.getInt("num_classes"));
  return {{inputs[0].dtype, {inputs[1].shape[0], attrs.getInt("num_classes")}}};
}

} // namespace

void registerTrainingOps(OpRegistry& registry) {
  registry.add(OpKind::BatchNormTrain, 3, 3, {"input", "weight", "bias"},
               {{"eps", AttrType::Float}}, inferBatchNormTrain);
  registry.add(OpKind::LayerNormTrain, 3, 3, {"input", "weight", "bias"},
               {{"normalized_ndim", AttrType::Int}, {"eps", AttrType::Float}}, inferLayerNormTrain);
  registry.add(OpKind::Dropout, 2, 2, {"input", "counter"},
               {{"p", AttrType::Float}, {"seed", AttrType::Int}, {"stream", AttrType::Int}},
               inferDropout);
  registry.add(OpKind::NllLoss, 2, 3, {"log_probs", "target", "weight"},
               {{"reduction", AttrType::String}, {"ignore_index", AttrType::Int}}, inferNllLoss);
  registry.add(OpKind::NllLossGrad, 2, 3, {"grad_loss", "target", "weight"},
               {{"reduction", AttrType::String},
                {"ignore_index", AttrType::Int},
                {"num_classes", AttrType::Int}},
               inferNllLossGrad);
}

} // namespace popsim::ir::ops
