#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

// Loss functions. Each is built from IR ops (their gradients come from the
// ops' gradient rules) and its result is marked as a loss, which is how a
// training model's loss is found.
namespace popsim::frontend::lowerings {

// PyTorch's at::Reduction enum: 0 none, 1 mean, 2 sum.
std::string lossReduction(LoweringContext& ctx, size_t index) {
  switch (ctx.toInt(index)) {
  case 0: return "none";
  case 1: return "mean";
  case 2: return "sum";
  default: ctx.unsupported("reduction " + std::to_string(ctx.toInt(index)));
  }
}

ir::Value* reduceLoss(LoweringContext& ctx, ir::Value* value, const std::string& reduction) {
  if (reduction == "none" || value->type().rank() == 0) {
    return value;
  }
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < value->type().rank(); ++d)
    dims.push_back(d);
  return ctx.emit(reduction == "sum" ? ir::OpKind::ReduceSum : ir::OpKind::ReduceMean, {value},
                  {{"dims", dims}, {"keepdim", false}});
}

void setLoss(LoweringContext& ctx, ir::Value* loss) {
  ctx.markLoss(loss, LoweringContext::LossKind::Builtin);
  ctx.setOutput(0, loss);
}

namespace {

// log_probs [N, C] (or [C], or [N, C, d...]) and class indices [N] ([], [N, d...])
// as the [rows, C] / [rows] pair nll_loss takes, with the shape of a
// per-sample result.
struct Classification {
  ir::Value* scores;
  ir::Value* target;
  ir::Shape perSample;
};

Classification flattenClasses(LoweringContext& ctx, ir::Value* scores, ir::Value* target) {
  if (target->type().dtype != ir::DType::Int64) {
    ctx.unsupported("a target of " + target->type().str() +
                    "; popsim takes class indices (int64) as targets");
  }
  const ir::Shape& shape = scores->type().shape;
  if (shape.size() == 1) {
    return {reshape(ctx, scores, {1, shape[0]}), reshape(ctx, target, {1}), {}};
  }
  if (shape.size() == 2) {
    return {scores, target, {shape[0]}};
  }
  // [N, C, d1, ...] -> [N, d1, ..., C] -> [N * d1 * ..., C]
  std::vector<int64_t> perm = {0};
  for (size_t d = 2; d < shape.size(); ++d)
    perm.push_back(static_cast<int64_t>(d));
  perm.push_back(1);
  ir::Value* moved = permute(ctx, scores, perm);
  const int64_t classes = shape[1];
  const int64_t rows = scores->type().numel() / classes;
  return {reshape(ctx, moved, {rows, classes}), reshape(ctx, target, {rows}), target->type().shape};
}

// The class weights argument at `index`: a float32 [C] tensor, or null for none.
ir::Value* classWeights(LoweringContext& ctx, size_t index, int64_t classes) {
  if (ctx.isNone(index)) return nullptr;
  ir::Value* weight = floatTensor(ctx, index);
  if (weight->type().shape != ir::Shape{classes}) {
    ctx.unsupported("class weights of shape " + ir::shapeToString(weight->type().shape) +
                    "; the loss has " + std::to_string(classes) +
                    " classes, so weight must have shape [" + std::to_string(classes) + "]");
  }
  return weight;
}

ir::Value* nllLoss(LoweringContext& ctx, const Classification& c, ir::Value* weight,
                   const std::string& reduction, int64_t ignoreIndex) {
  std::vector<ir::Value*> inputs = {c.scores, c.target};
  if (weight != nullptr) inputs.push_back(weight);
  ir::Value* loss = ctx.emit(ir::OpKind::NllLoss, inputs,
                             {{"reduction", reduction}, {"ignore_index", ignoreIndex}});
  return reduction == "none" ? reshape(ctx, loss, c.perSample) : loss;
}

// Label smoothing's second term for class-index targets, as PyTorch: per
// sample -sum over classes of weight[c] * log_probs[c] (0 for ignored
// targets), reduced; the mean divides by the total weight of the counted
// targets (their count without weights).
ir::Value* smoothingTerm(LoweringContext& ctx, const Classification& c, ir::Value* weight,
                         const std::string& reduction, int64_t ignoreIndex) {
  ir::Value* weighted =
      weight == nullptr ? c.scores : ctx.emit(ir::OpKind::Mul, {c.scores, weight});
  ir::Value* perSample = affine(ctx,
                                ctx.emit(ir::OpKind::ReduceSum, {weighted},
                                         {{"dims", std::vector<int64_t>{1}}, {"keepdim", false}}),
                                -1.0, 0.0);
  ir::Value* counted =
      emitBinary(ctx, "ne", c.target,
                 constantFilled(ctx, {ir::DType::Int64, {}}, static_cast<double>(ignoreIndex)));
  perSample = ctx.emit(ir::OpKind::Where, {counted, perSample, floatScalar(ctx, 0.0)});
  if (reduction == "none") return reshape(ctx, perSample, c.perSample);
  ir::Value* sum = reduceLoss(ctx, perSample, "sum");
  if (reduction == "sum") return sum;
  // The total weight of the counted targets is nll_loss's sum over log
  // probabilities that are all -1 (a constant: no gradient flows into it).
  const ir::TensorType& type = c.scores->type();
  const Classification ones{constantFilled(ctx, type, -1.0), c.target, c.perSample};
  return ctx.emit(ir::OpKind::Div, {sum, nllLoss(ctx, ones, weight, "sum", ignoreIndex)});
}

// Cross entropy with class probabilities as targets (same shape as the
// scores), as PyTorch: -sum over classes of weight[c] * target * log_probs,
// the targets smoothed to target * (1 - s) + s / C first; the mean divides
// by the number of samples (every element but the class dimension).
ir::Value* crossEntropyWithProbabilities(LoweringContext& ctx, ir::Value* logProbs,
                                         ir::Value* target, ir::Value* weight, int64_t classDim,
                                         const std::string& reduction, double smoothing) {
  const ir::Shape& shape = logProbs->type().shape;
  if (target->type().shape != shape) {
    ctx.unsupported("class-probability targets of shape " +
                    ir::shapeToString(target->type().shape) + " for scores of shape " +
                    ir::shapeToString(shape) + "; probability targets must have the scores' shape");
  }
  const int64_t classes = shape[static_cast<size_t>(classDim)];
  if (smoothing > 0.0) {
    target = affine(ctx, target, 1.0 - smoothing, smoothing / static_cast<double>(classes));
  }
  ir::Value* terms = ctx.emit(ir::OpKind::Mul, {logProbs, target});
  if (weight != nullptr) {
    ir::Shape along(shape.size() - static_cast<size_t>(classDim), 1); // weight over classDim
    along[0] = classes;
    terms = ctx.emit(ir::OpKind::Mul, {terms, reshape(ctx, weight, along)});
  }
  terms = affine(ctx, terms, -1.0, 0.0);
  if (reduction == "none") {
    return ctx.emit(ir::OpKind::ReduceSum, {terms},
                    {{"dims", std::vector<int64_t>{classDim}}, {"keepdim", false}});
  }
  ir::Value* sum = reduceLoss(ctx, terms, "sum");
  if (reduction == "sum") return sum;
  return affine(ctx, sum, static_cast<double>(classes) / static_cast<double>(terms->type().numel()),
                0.0);
}

// aten::cross_entropy_loss(input, target, weight, reduction, ignore_index,
// label_smoothing): class indices (int64) or class probabilities (float,
// the scores' shape) as targets.
void lowerCrossEntropy(LoweringContext& ctx) {
  ir::Value* scores = floatTensor(ctx, 0);
  const int64_t classDim = scores->type().rank() == 1 ? 0 : 1;
  const int64_t classes = scores->type().shape[static_cast<size_t>(classDim)];
  ir::Value* weight = classWeights(ctx, 2, classes);
  const std::string reduction = lossReduction(ctx, 3);
  const int64_t ignoreIndex = ctx.toInt(4);
  const double smoothing = ctx.numInputs() > 5 ? ctx.toDouble(5) : 0.0;
  ir::Value* logProbs = ctx.emit(ir::OpKind::LogSoftmax, {scores}, {{"dim", classDim}});
  ir::Value* target = ctx.tensor(1);
  if (ir::isFloat(target->type().dtype)) {
    return setLoss(ctx, crossEntropyWithProbabilities(ctx, logProbs, target, weight, classDim,
                                                      reduction, smoothing));
  }
  const Classification c = flattenClasses(ctx, logProbs, target);
  ir::Value* loss = nllLoss(ctx, c, weight, reduction, ignoreIndex);
  if (smoothing > 0.0) {
    ir::Value* smooth = smoothingTerm(ctx, c, weight, reduction, ignoreIndex);
    loss = ctx.emit(ir::OpKind::Add,
                    {affine(ctx, loss, 1.0 - smoothing, 0.0),
                     affine(ctx, smooth, smoothing / static_cast<double>(classes), 0.0)});
  }
  setLoss(ctx, loss);
}

// aten::nll_loss / nll_loss_nd / nll_loss2d(input, target, weight, reduction, ignore_index)
void lowerNllLoss(LoweringContext& ctx) {
  ir::Value* logProbs = floatTensor(ctx, 0);
  const int64_t classes = logProbs->type().shape[logProbs->type().rank() == 1 ? 0 : 1];
  const Classification c = flattenClasses(ctx, logProbs, ctx.tensor(1));
  setLoss(ctx, nllLoss(ctx, c, classWeights(ctx, 2, classes), lossReduction(ctx, 3), ctx.toInt(4)));
}

// aten::mse_loss(input, target, reduction) = reduce((input - target)^2)
void lowerMseLoss(LoweringContext& ctx) {
  ir::Value* input = floatTensor(ctx, 0);
  ir::Value* difference = ctx.emit(ir::OpKind::Sub, {input, targetLike(ctx, 1, input)});
  ir::Value* squared = ctx.emit(ir::OpKind::Mul, {difference, difference});
  setLoss(ctx, reduceLoss(ctx, squared, lossReduction(ctx, 2)));
}

// aten::l1_loss(input, target, reduction) = reduce(|input - target|)
void lowerL1Loss(LoweringContext& ctx) {
  ir::Value* input = floatTensor(ctx, 0);
  ir::Value* difference = ctx.emit(ir::OpKind::Sub, {input, targetLike(ctx, 1, input)});
  setLoss(ctx, reduceLoss(ctx, ctx.emit(ir::OpKind::Abs, {difference}), lossReduction(ctx, 2)));
}

// aten::binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction),
// in PyTorch's stable form: (1 - t) x + w_pos (m + log(exp(-m) + exp(-x - m))),
// m = max(-x, 0), w_pos = 1 + (pos_weight - 1) t, times weight.
void lowerBceWithLogits(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  ir::Value* t = floatTensor(ctx, 1);
  ir::Value* negative = affine(ctx, x, -1.0, 0.0);
  ir::Value* m = ctx.emit(ir::OpKind::Relu, {negative});
  ir::Value* a = ctx.emit(ir::OpKind::Exp, {affine(ctx, m, -1.0, 0.0)});
  ir::Value* b = ctx.emit(ir::OpKind::Exp, {ctx.emit(ir::OpKind::Sub, {negative, m})});
  ir::Value* logSum = ctx.emit(ir::OpKind::Log, {ctx.emit(ir::OpKind::Add, {a, b})});
  ir::Value* weighted = ctx.emit(ir::OpKind::Mul, {affine(ctx, t, -1.0, 1.0), x});
  ir::Value* loss = nullptr;
  if (ctx.isNone(3)) {
    loss = ctx.emit(ir::OpKind::Add, {ctx.emit(ir::OpKind::Add, {weighted, m}), logSum});
  } else {
    ir::Value* scaled = ctx.emit(ir::OpKind::Mul, {affine(ctx, floatTensor(ctx, 3), 1.0, -1.0), t});
    ir::Value* logWeight = affine(ctx, scaled, 1.0, 1.0);
    ir::Value* softplus = ctx.emit(ir::OpKind::Add, {logSum, m});
    loss = ctx.emit(ir::OpKind::Add, {weighted, ctx.emit(ir::OpKind::Mul, {logWeight, softplus})});
  }
  if (!ctx.isNone(2)) loss = ctx.emit(ir::OpKind::Mul, {loss, floatTensor(ctx, 2)});
  setLoss(ctx, reduceLoss(ctx, loss, lossReduction(ctx, 4)));
}

// popsim::identity_loss(x, reduction): the value the training model minimises.
void lowerIdentityLoss(LoweringContext& ctx) {
  const std::string reduction = ctx.toString(1);
  if (reduction != "sum" && reduction != "mean" && reduction != "none") {
    ctx.unsupported("identity_loss reduction \"" + reduction +
                    "\" (use \"sum\", \"mean\" or \"none\")");
  }
  ir::Value* loss = reduceLoss(ctx, floatTensor(ctx, 0), reduction);
  ctx.markLoss(loss, LoweringContext::LossKind::Identity);
  ctx.setOutput(0, loss);
}

// popsim::torch_loss(x): the result of one of PyTorch's loss functions that
// PyTorch writes in Python (python_losses.py marks it while a training model
// traces), a loss as aten's loss ops are.
void lowerTorchLoss(LoweringContext& ctx) { setLoss(ctx, ctx.tensor(0)); }

} // namespace

void registerLosses(LoweringRegistry& registry) {
  registry.add("aten::cross_entropy_loss", lowerCrossEntropy);
  registry.add("aten::nll_loss", lowerNllLoss);
  registry.add("aten::nll_loss_nd", lowerNllLoss);
  registry.add("aten::nll_loss2d", lowerNllLoss);
  registry.add("aten::mse_loss", lowerMseLoss);
  registry.add("aten::l1_loss", lowerL1Loss);
  registry.add("aten::binary_cross_entropy_with_logits", lowerBceWithLogits);
  registry.add("popsim::identity_loss", lowerIdentityLoss);
  registry.add("popsim::torch_loss", lowerTorchLoss);
}

} // namespace popsim::frontend::lowerings
