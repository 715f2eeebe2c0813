#include "ir/ops/gradient_helpers.h"
#include "ir/ops/op_registry.h"
#include "ir/ops/type_checks.h"

// The negative log-likelihood loss (what cross_entropy and nll_loss lower
// to) and its gradient.
namespace popsim::ir::ops {
namespace {

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

Grads nllLossGradient(GradientBuilder& b, const Grads& g, const Needed&) {
  Attributes a = copyAttrs(nodeOf(b).attrs(), {"reduction", "ignore_index"});
  a.set("num_classes", in(b, 0)->type().shape[1]);
  std::vector<Value*> inputs = {g[0], in(b, 1)};
  if (nodeOf(b).inputs().size() == 3) inputs.push_back(in(b, 2)); // class weights
  Grads result = none(b);
  result[0] = b.emit(OpKind::NllLossGrad, inputs, a);
  return result; // (PyTorch has no gradient for the targets nor the class weights)
}

} // namespace

void registerNllLossOps(OpRegistry& registry) {
  registry.add(OpKind::NllLoss, 2, 3, {"log_probs", "target", "weight"},
               {{"reduction", AttrType::String}, {"ignore_index", AttrType::Int}}, inferNllLoss);
  registry.add(OpKind::NllLossGrad, 2, 3, {"grad_loss", "target", "weight"},
               {{"reduction", AttrType::String},
                {"ignore_index", AttrType::Int},
                {"num_classes", AttrType::Int}},
               inferNllLossGrad);
  registry.setGradient(OpKind::NllLoss, nllLossGradient);
  registry.setWork(OpKind::NllLoss, work::reduction<1>);
  registry.setWork(OpKind::NllLossGrad, work::reduction<1>);
}

} // namespace popsim::ir::ops
