// CTCLoss: aten::ctc_loss with the lengths as lists or as tensors, as
// PyTorch composes it: the per-sample negative log likelihoods (ctc_loss op),
// zeroed where infinite with zero_infinity, then divided by the target
// lengths (at least 1) and averaged ("mean"), summed, or returned.

#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <cmath>
#include <limits>

namespace popsim::frontend::lowerings {
namespace {

// The lengths argument at `index`: an int64 [N] tensor, or a list of ints as a constant.
ir::Value* lengths(LoweringContext& ctx, size_t index, int64_t samples, const char* what) {
  ir::Value* value = nullptr;
  if (ctx.isTensor(index)) {
    value = castTo(ctx, ctx.tensor(index), ir::DType::Int64);
  } else {
    value = int64Constant(ctx, ctx.toIntList(index));
  }
  if (value->type().shape != ir::Shape{samples} && !(samples == 1 && value->type().rank() == 0)) {
    ctx.unsupported(std::string(what) + " of shape " + ir::shapeToString(value->type().shape) +
                    " for " + std::to_string(samples) + " samples; give one length per sample");
  }
  return reshape(ctx, value, {samples});
}

// aten::ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0,
// reduction=Mean, zero_infinity=False).
void lowerCtcLoss(LoweringContext& ctx) {
  ir::Value* logProbs = floatTensor(ctx, 0);
  ir::Value* targets = ctx.tensor(1);
  const bool unbatched = logProbs->type().rank() == 2; // [T, C] with [S] targets
  if (unbatched) {
    const ir::Shape& shape = logProbs->type().shape;
    logProbs = reshape(ctx, logProbs, {shape[0], 1, shape[1]});
    targets = reshape(ctx, targets, {1, targets->type().numel()});
  }
  if (logProbs->type().rank() != 3) {
    ctx.unsupported("ctc_loss of log_probs " + logProbs->type().str() +
                    "; it takes [T, N, C] (or [T, C] for one sample)");
  }
  const int64_t samples = logProbs->type().shape[1];
  targets = castTo(ctx, targets, ir::DType::Int64);
  ir::Value* targetLengths = lengths(ctx, 3, samples, "target_lengths");
  const bool zeroInfinity = ctx.toBool(6);
  ir::Value* nll =
      ctx.emit(ir::OpKind::CtcLoss,
               {logProbs, targets, lengths(ctx, 2, samples, "input_lengths"), targetLengths},
               {{"blank", ctx.toInt(4)}, {"zero_infinity", zeroInfinity}});
  if (zeroInfinity) {
    ir::Value* infinite =
        emitBinary(ctx, "eq", nll, floatScalar(ctx, std::numeric_limits<double>::infinity()));
    nll = ctx.emit(ir::OpKind::Where, {infinite, floatScalar(ctx, 0.0), nll});
  }
  const std::string reduction = lossReduction(ctx, 5);
  if (reduction == "mean") {
    ir::Value* divisors = emitPointwise(ctx, castTo(ctx, targetLengths, ir::DType::Float32),
                                        "clamp", {1.0, std::numeric_limits<double>::infinity()});
    nll = ctx.emit(ir::OpKind::Div, {nll, divisors});
  }
  if (unbatched && reduction == "none") nll = reshape(ctx, nll, {});
  setLoss(ctx, reduceLoss(ctx, nll, reduction));
}

} // namespace

void registerCtcLoss(LoweringRegistry& registry) { registry.add("aten::ctc_loss", lowerCtcLoss); }

} // namespace popsim::frontend::lowerings
