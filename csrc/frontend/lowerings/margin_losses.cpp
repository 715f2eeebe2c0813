// Margin losses over classes: multi_margin_loss and multilabel_margin_loss,
// written with IR ops as PyTorch's CPU kernels compute them: a term counts
// only where its margin violation z is > 0 (so NaN terms count as zero, as
// there), and the class scores a target picks are read with nll_loss, whose
// gradient scatters back into them.

#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <limits>
#include <numeric>

namespace popsim::frontend::lowerings {
namespace {

// nll_loss never ignores this target: every target is checked against the classes.
constexpr int64_t kNoIgnoredTarget = std::numeric_limits<int64_t>::min();

// The int64 class indices 0..classes-1 as a [1, ..., classes] constant of `rank` dimensions.
ir::Value* classIndices(LoweringContext& ctx, int64_t classes, size_t rank) {
  std::vector<int64_t> values(static_cast<size_t>(classes));
  std::iota(values.begin(), values.end(), int64_t{0});
  ir::Shape shape(rank, 1);
  shape.back() = classes;
  return int64Constant(ctx, values, shape);
}

// scores[i, target[i]] for scores [rows, C] and targets [rows] (checked to be classes).
ir::Value* pickedScores(LoweringContext& ctx, ir::Value* scores, ir::Value* target) {
  ir::Value* negated =
      ctx.emit(ir::OpKind::NllLoss, {scores, target},
               {{"reduction", std::string("none")}, {"ignore_index", kNoIgnoredTarget}});
  return affine(ctx, negated, -1.0, 0.0);
}

// z where z > 0 (and `keep`, if given), else 0; squared for power 2 (after
// the choice, so a NaN z left out gives no NaN gradient).
ir::Value* violation(LoweringContext& ctx, ir::Value* z, ir::Value* keep, int64_t power) {
  ir::Value* counted = emitBinary(ctx, "gt", z, floatScalar(ctx, 0.0));
  if (keep != nullptr) counted = emitBinary(ctx, "logical_and", counted, keep);
  ir::Value* term = ctx.emit(ir::OpKind::Where, {counted, z, floatScalar(ctx, 0.0)});
  return power == 2 ? ctx.emit(ir::OpKind::Mul, {term, term}) : term;
}

// The scores as [N, C] and the targets as `targetShape(N)`; a single sample
// ([C] scores) becomes one row.
struct Rows {
  ir::Value* scores;
  ir::Value* target;
  bool single;
};

Rows asRows(LoweringContext& ctx, const char* op, bool targetPerClass) {
  ir::Value* scores = floatTensor(ctx, 0);
  ir::Value* target = ctx.tensor(1);
  const ir::Shape& shape = scores->type().shape;
  const bool single = shape.size() == 1;
  const int64_t samples = single ? 1 : shape[0];
  const ir::Shape expected = targetPerClass ? shape : (single ? ir::Shape{} : ir::Shape{samples});
  if (shape.size() > 2 || shape.empty() || target->type().dtype != ir::DType::Int64 ||
      target->type().shape != expected) {
    ctx.unsupported(std::string(op) + " of scores " + scores->type().str() + " and target " +
                    target->type().str() +
                    ": it takes [N, C] or [C] scores and int64 targets of shape " +
                    ir::shapeToString(expected));
  }
  const int64_t classes = shape.back();
  return {reshape(ctx, scores, {samples, classes}),
          reshape(ctx, target, targetPerClass ? ir::Shape{samples, classes} : ir::Shape{samples}),
          single};
}

// The per-sample losses [N] reduced; `none` gives [N], or [] for one sample.
void setReducedLoss(LoweringContext& ctx, ir::Value* perSample, bool single,
                    size_t reductionIndex) {
  const std::string reduction = lossReduction(ctx, reductionIndex);
  if (reduction == "none" && single) perSample = reshape(ctx, perSample, {});
  setLoss(ctx, reduceLoss(ctx, perSample, reduction));
}

// multi_margin_loss(self, target, p=1, margin=1, weight=None, reduction): per
// sample, the sum over classes j other than the target t of
// max(0, margin - x[t] + x[j])^p (times weight[t]), divided by C.
void lowerMultiMarginLoss(LoweringContext& ctx) {
  const Rows rows = asRows(ctx, "multi_margin_loss", false);
  const int64_t power = ctx.toInt(2);
  if (power != 1 && power != 2) {
    ctx.unsupported("multi_margin_loss with p=" + std::to_string(power) +
                    "; PyTorch takes p 1 or 2");
  }
  const double margin = ctx.toDouble(3);
  const ir::Shape& shape = rows.scores->type().shape; // [N, C]
  const int64_t samples = shape[0];
  const int64_t classes = shape[1];
  ir::Value* target = rows.target;
  ir::Value* picked = reshape(ctx, pickedScores(ctx, rows.scores, target), {samples, 1});
  ir::Value* z = ctx.emit(ir::OpKind::Add, {rows.scores, affine(ctx, picked, -1.0, margin)});
  ir::Value* otherClass =
      emitBinary(ctx, "ne", classIndices(ctx, classes, 2), reshape(ctx, target, {samples, 1}));
  ir::Value* terms = violation(ctx, z, otherClass, power);
  if (!ctx.isNone(4)) {
    ir::Value* weight = floatTensor(ctx, 4);
    if (weight->type().shape != ir::Shape{classes}) {
      ctx.unsupported("multi_margin_loss weight of shape " +
                      ir::shapeToString(weight->type().shape) +
                      "; it must have one weight per class, [" + std::to_string(classes) + "]");
    }
    ir::Value* perClass = ctx.emit(ir::OpKind::Broadcast, {weight}, {{"shape", shape}});
    ir::Value* targetWeight = reshape(ctx, pickedScores(ctx, perClass, target), {samples, 1});
    terms = ctx.emit(ir::OpKind::Mul, {terms, targetWeight});
  }
  ir::Value* sums = ctx.emit(ir::OpKind::ReduceSum, {terms},
                             {{"dims", std::vector<int64_t>{1}}, {"keepdim", false}});
  ir::Value* perSample =
      ctx.emit(ir::OpKind::Div, {sums, floatScalar(ctx, static_cast<double>(classes))});
  setReducedLoss(ctx, perSample, rows.single, 5);
}

// multilabel_margin_loss(self, target, reduction): the targets of a sample are
// its target row up to the first negative entry; per sample, the sum over its
// targets t and the classes k that are not targets of max(0, 1 - x[t] + x[k]),
// divided by C.
void lowerMultilabelMarginLoss(LoweringContext& ctx) {
  const Rows rows = asRows(ctx, "multilabel_margin_loss", true);
  const int64_t samples = rows.scores->type().shape[0];
  const int64_t classes = rows.scores->type().shape[1];
  ir::Value* target = rows.target; // [N, C] slots
  // A slot is used while no slot so far (itself included) is negative.
  ir::Value* nonNegative =
      castTo(ctx, emitBinary(ctx, "ge", target, constantFilled(ctx, {ir::DType::Int64, {}}, 0.0)),
             ir::DType::Int64);
  ir::Value* used =
      castTo(ctx, ctx.emit(ir::OpKind::CumulativeProduct, {nonNegative}, {{"dim", int64_t{1}}}),
             ir::DType::Bool);
  ir::Value* slotTarget =
      ctx.emit(ir::OpKind::Where, {used, target, constantFilled(ctx, {ir::DType::Int64, {}}, 0.0)});
  // isTarget[i, k]: some used slot of sample i names class k.
  ir::Value* names =
      emitBinary(ctx, "logical_and",
                 emitBinary(ctx, "eq", reshape(ctx, slotTarget, {samples, classes, 1}),
                            classIndices(ctx, classes, 3)),
                 reshape(ctx, used, {samples, classes, 1}));
  ir::Value* namedCount = ctx.emit(ir::OpKind::ReduceSum, {castTo(ctx, names, ir::DType::Int64)},
                                   {{"dims", std::vector<int64_t>{1}}, {"keepdim", true}});
  ir::Value* notTarget = emitBinary(ctx, "eq", namedCount,
                                    constantFilled(ctx, {ir::DType::Int64, {}}, 0.0)); // [N, 1, C]
  // The score of each slot's target: nll_loss over the scores repeated per slot.
  ir::Value* repeated =
      ctx.emit(ir::OpKind::Broadcast, {reshape(ctx, rows.scores, {samples, 1, classes})},
               {{"shape", ir::Shape{samples, classes, classes}}});
  ir::Value* picked = pickedScores(ctx, reshape(ctx, repeated, {samples * classes, classes}),
                                   reshape(ctx, slotTarget, {samples * classes}));
  ir::Value* z = ctx.emit(ir::OpKind::Add,
                          {affine(ctx, reshape(ctx, picked, {samples, classes, 1}), -1.0, 1.0),
                           reshape(ctx, rows.scores, {samples, 1, classes})});
  ir::Value* keep =
      emitBinary(ctx, "logical_and", reshape(ctx, used, {samples, classes, 1}), notTarget);
  ir::Value* sums = ctx.emit(ir::OpKind::ReduceSum, {violation(ctx, z, keep, 1)},
                             {{"dims", std::vector<int64_t>{1, 2}}, {"keepdim", false}});
  ir::Value* perSample =
      ctx.emit(ir::OpKind::Div, {sums, floatScalar(ctx, static_cast<double>(classes))});
  setReducedLoss(ctx, perSample, rows.single, 2);
}

} // namespace

void registerMarginLosses(LoweringRegistry& registry) {
  registry.add("aten::multi_margin_loss", lowerMultiMarginLoss);
  registry.add("aten::multilabel_margin_loss", lowerMultilabelMarginLoss);
}

} // namespace popsim::frontend::lowerings
