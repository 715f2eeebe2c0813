// Losses computed element by element and then reduced: smooth L1, Huber, soft
// margin, binary cross entropy, KL divergence, Poisson NLL, margin ranking,
// hinge embedding, triplet margin (with pairwise_distance), each written as
// PyTorch's formula with IR ops, whose gradient rules give its gradient.

#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <cmath>

namespace popsim::frontend::lowerings {
namespace {

ir::Value* clampMin(LoweringContext& ctx, ir::Value* x, double low) {
  return emitPointwise(ctx, x, "clamp", {low, INFINITY});
}

// smooth_l1_loss(self, target, reduction, beta): 0.5 d^2 / beta where |d| < beta,
// |d| - 0.5 beta elsewhere (L1 for beta 0). huber_loss(..., delta): 0.5 d^2
// where |d| < delta, delta (|d| - 0.5 delta) elsewhere.
template <bool Huber> void lowerSmoothL1(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  ir::Value* d = sub(ctx, x, targetLike(ctx, 1, x));
  ir::Value* size = ctx.emit(ir::OpKind::Abs, {d});
  const double beta = ctx.numInputs() > 3 ? ctx.toDouble(3) : 1.0;
  ir::Value* loss = nullptr;
  if (!Huber && beta == 0.0) {
    loss = size;
  } else {
    // The square of d clamped to [-beta, beta]: the same where it is chosen,
    // and finite elsewhere, so that where's zero gradient there stays zero
    // for an infinite d (PyTorch's gradient is sign(d) there).
    ir::Value* inside = emitPointwise(ctx, d, "clamp", {-beta, beta});
    ir::Value* square = affine(ctx, mul(ctx, inside, inside), Huber ? 0.5 : 0.5 / beta, 0.0);
    ir::Value* linear =
        Huber ? affine(ctx, size, beta, -0.5 * beta * beta) : affine(ctx, size, 1.0, -0.5 * beta);
    loss = ctx.emit(ir::OpKind::Where,
                    {emitBinary(ctx, "lt", size, floatScalar(ctx, beta)), square, linear});
  }
  setLoss(ctx, reduceLoss(ctx, loss, lossReduction(ctx, 2)));
}

// soft_margin_loss(self, target, reduction) = log(1 + exp(-target * self)).
void lowerSoftMargin(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  ir::Value* margin = affine(ctx, mul(ctx, targetLike(ctx, 1, x), x), -1.0, 0.0);
  ir::Value* loss = emitPointwise(ctx, ctx.emit(ir::OpKind::Exp, {margin}), "log1p");
  setLoss(ctx, reduceLoss(ctx, loss, lossReduction(ctx, 2)));
}

// binary_cross_entropy(self, target, weight, reduction) =
// -w (t log(x) + (1 - t) log(1 - x)), each log at least -100 as in PyTorch,
// which also refuses inputs outside [0, 1] (NaN included) at run time.
void lowerBinaryCrossEntropy(LoweringContext& ctx) {
  ir::Value* x = ctx.emit(ir::OpKind::CheckRange, {floatTensor(ctx, 0)},
                          {{"min", 0.0},
                           {"max", 1.0},
                           {"what", std::string("binary_cross_entropy: every element of "
                                                "the input must be between 0 and 1 (PyTorch "
                                                "raises for this too)")}});
  ir::Value* t = floatTensor(ctx, 1);
  ir::Value* logX = clampMin(ctx, ctx.emit(ir::OpKind::Log, {x}), -100.0);
  ir::Value* logRest =
      clampMin(ctx, emitPointwise(ctx, affine(ctx, x, -1.0, 0.0), "log1p"), -100.0);
  ir::Value* sum = add(ctx, mul(ctx, t, logX), mul(ctx, affine(ctx, t, -1.0, 1.0), logRest));
  ir::Value* loss = affine(ctx, sum, -1.0, 0.0);
  if (!ctx.isNone(2)) loss = mul(ctx, loss, floatTensor(ctx, 2));
  setLoss(ctx, reduceLoss(ctx, loss, lossReduction(ctx, 3)));
}

// kl_div(self, target, reduction, log_target): target (log target - self) where
// target > 0 (0 elsewhere), or exp(target) (target - self) for log targets.
void lowerKlDiv(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  ir::Value* t = floatTensor(ctx, 1);
  const auto logTarget = ctx.argumentIndex("log_target");
  ir::Value* loss = nullptr;
  if (logTarget && ctx.toBool(*logTarget)) {
    loss = mul(ctx, ctx.emit(ir::OpKind::Exp, {t}), sub(ctx, t, x));
  } else {
    ir::Value* positive = mul(ctx, t, sub(ctx, ctx.emit(ir::OpKind::Log, {t}), x));
    loss = ctx.emit(ir::OpKind::Where, {emitBinary(ctx, "gt", t, floatScalar(ctx, 0.0)), positive,
                                        floatScalar(ctx, 0.0)});
  }
  setLoss(ctx, reduceLoss(ctx, loss, lossReduction(ctx, 2)));
}

// poisson_nll_loss(input, target, log_input, full, eps, reduction):
// exp(x) - t x (log input) or x - t log(x + eps), plus Stirling's
// t log t - t + 0.5 log(2 pi t) where t > 1 when full.
void lowerPoissonNll(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  ir::Value* t = floatTensor(ctx, 1);
  ir::Value* loss =
      ctx.toBool(2)
          ? sub(ctx, ctx.emit(ir::OpKind::Exp, {x}), mul(ctx, t, x))
          : sub(ctx, x,
                mul(ctx, t, ctx.emit(ir::OpKind::Log, {affine(ctx, x, 1.0, ctx.toDouble(4))})));
  if (ctx.toBool(3)) {
    ir::Value* logT = ctx.emit(ir::OpKind::Log, {t});
    ir::Value* stirling =
        add(ctx, sub(ctx, mul(ctx, t, logT), t),
            affine(ctx, ctx.emit(ir::OpKind::Log, {affine(ctx, t, 2.0 * M_PI, 0.0)}), 0.5, 0.0));
    loss = add(ctx, loss,
               ctx.emit(ir::OpKind::Where, {emitBinary(ctx, "gt", t, floatScalar(ctx, 1.0)),
                                            stirling, floatScalar(ctx, 0.0)}));
  }
  setLoss(ctx, reduceLoss(ctx, loss, lossReduction(ctx, 5)));
}

// margin_ranking_loss(x1, x2, target, margin, reduction) =
// max(0, -target (x1 - x2) + margin).
void lowerMarginRanking(LoweringContext& ctx) {
  ir::Value* d = sub(ctx, floatTensor(ctx, 0), floatTensor(ctx, 1));
  ir::Value* margin = affine(ctx, mul(ctx, floatTensor(ctx, 2), d), -1.0, ctx.toDouble(3));
  setLoss(ctx, reduceLoss(ctx, clampMin(ctx, margin, 0.0), lossReduction(ctx, 4)));
}

// hinge_embedding_loss(self, target, margin, reduction): self where target
// is not -1, plus max(0, margin - self) where target is not 1.
void lowerHingeEmbedding(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  ir::Value* t = targetLike(ctx, 1, x);
  ir::Value* zero = floatScalar(ctx, 0.0);
  ir::Value* hinge = clampMin(ctx, affine(ctx, x, -1.0, ctx.toDouble(2)), 0.0);
  ir::Value* loss = add(
      ctx,
      ctx.emit(ir::OpKind::Where, {emitBinary(ctx, "ne", t, floatScalar(ctx, 1.0)), hinge, zero}),
      ctx.emit(ir::OpKind::Where, {emitBinary(ctx, "ne", t, floatScalar(ctx, -1.0)), x, zero}));
  setLoss(ctx, reduceLoss(ctx, loss, lossReduction(ctx, 3)));
}

// ||x1 - x2 + eps||_p over the last dimension, as pairwise_distance computes it.
ir::Value* distance(LoweringContext& ctx, ir::Value* a, ir::Value* b, double p, double eps,
                    bool keepdim) {
  ir::Value* d = affine(ctx, sub(ctx, a, b), 1.0, eps);
  const int64_t rank = std::max<int64_t>(d->type().rank(), 1);
  return vectorNormOver(ctx, d, p, {rank - 1}, keepdim);
}

// pairwise_distance(x1, x2, p, eps, keepdim).
void lowerPairwiseDistance(LoweringContext& ctx) {
  ctx.setOutput(0, distance(ctx, floatTensor(ctx, 0), floatTensor(ctx, 1), ctx.toDouble(2),
                            ctx.toDouble(3), ctx.toBool(4)));
}

// triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction)
// = max(d(a, p) - d(a, n) + margin, 0), with d(a, n) the smaller of d(a, n)
// and d(p, n) when swap.
void lowerTripletMargin(LoweringContext& ctx) {
  ir::Value* anchor = floatTensor(ctx, 0);
  ir::Value* positive = floatTensor(ctx, 1);
  ir::Value* negative = floatTensor(ctx, 2);
  const double p = ctx.toDouble(4);
  const double eps = ctx.toDouble(5);
  ir::Value* toPositive = distance(ctx, anchor, positive, p, eps, false);
  ir::Value* toNegative = distance(ctx, anchor, negative, p, eps, false);
  if (ctx.toBool(6)) {
    toNegative =
        emitBinary(ctx, "minimum", toNegative, distance(ctx, positive, negative, p, eps, false));
  }
  ir::Value* loss =
      clampMin(ctx, affine(ctx, sub(ctx, toPositive, toNegative), 1.0, ctx.toDouble(3)), 0.0);
  setLoss(ctx, reduceLoss(ctx, loss, lossReduction(ctx, 7)));
}

} // namespace

void registerElementwiseLosses(LoweringRegistry& registry) {
  registry.add("aten::smooth_l1_loss", lowerSmoothL1<false>);
  registry.add("aten::huber_loss", lowerSmoothL1<true>);
  registry.add("aten::soft_margin_loss", lowerSoftMargin);
  registry.add("aten::binary_cross_entropy", lowerBinaryCrossEntropy);
  registry.add("aten::kl_div", lowerKlDiv);
  registry.add("aten::poisson_nll_loss", lowerPoissonNll);
  registry.add("aten::margin_ranking_loss", lowerMarginRanking);
  registry.add("aten::hinge_embedding_loss", lowerHingeEmbedding);
  registry.add("aten::pairwise_distance", lowerPairwiseDistance);
  registry.add("aten::triplet_margin_loss", lowerTripletMargin);
}

} // namespace popsim::frontend::lowerings
