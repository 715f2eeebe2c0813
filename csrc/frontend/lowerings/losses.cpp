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

ir::Value* nllLoss(LoweringContext& ctx, const Classification& c, const std::string& reduction,
                   int64_t ignoreIndex) {
  ir::Value* loss = ctx.emit(ir::OpKind::NllLoss, {c.scores, c.target},
                             {{"reduction", reduction}, {"ignore_index", ignoreIndex}});
  return reduction == "none" ? reshape(ctx, loss, c.perSample) : loss;
}

void requireNoWeight(LoweringContext& ctx, size_t index) {
  if (!ctx.isNone(index)) {
    ctx.unsupported("class weights (weight=...) in a loss");
  }
}

// aten::cross_entropy_loss(input, target, weight, reduction, ignore_index, label_smoothing)
void lowerCrossEntropy(LoweringContext& ctx) {
  requireNoWeight(ctx, 2);
  if (ctx.numInputs() > 5 && ctx.toDouble(5) != 0.0) {
    ctx.unsupported("label_smoothing other than 0");
  }
  ir::Value* scores = floatTensor(ctx, 0);
  const int64_t classDim = scores->type().rank() == 1 ? 0 : 1;
  ir::Value* logProbs = ctx.emit(ir::OpKind::LogSoftmax, {scores}, {{"dim", classDim}});
  const Classification c = flattenClasses(ctx, logProbs, ctx.tensor(1));
  setLoss(ctx, nllLoss(ctx, c, lossReduction(ctx, 3), ctx.toInt(4)));
}

// aten::nll_loss / nll_loss_nd / nll_loss2d(input, target, weight, reduction, ignore_index)
void lowerNllLoss(LoweringContext& ctx) {
  requireNoWeight(ctx, 2);
  const Classification c = flattenClasses(ctx, floatTensor(ctx, 0), ctx.tensor(1));
  setLoss(ctx, nllLoss(ctx, c, lossReduction(ctx, 3), ctx.toInt(4)));
}

// aten::mse_loss(input, target, reduction) = reduce((input - target)^2)
void lowerMseLoss(LoweringContext& ctx) {
  ir::Value* difference = ctx.emit(ir::OpKind::Sub, {floatTensor(ctx, 0), floatTensor(ctx, 1)});
  ir::Value* squared = ctx.emit(ir::OpKind::Mul, {difference, difference});
  setLoss(ctx, reduceLoss(ctx, squared, lossReduction(ctx, 2)));
}

// aten::l1_loss(input, target, reduction) = reduce(|input - target|)
void lowerL1Loss(LoweringContext& ctx) {
  ir::Value* difference = ctx.emit(ir::OpKind::Sub, {floatTensor(ctx, 0), floatTensor(ctx, 1)});
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
}

} // namespace popsim::frontend::lowerings
