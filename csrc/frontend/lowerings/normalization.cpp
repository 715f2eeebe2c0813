#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

#include <optional>

namespace popsim::frontend::lowerings {
namespace {

// A missing affine weight or bias stands in as a constant filled with `value`.
ir::Value* tensorOr(LoweringContext& ctx, size_t index, const ir::Shape& shape, float value) {
  return ctx.isNone(index) ? constantFilled(ctx, {ctx.tensor(0)->type().dtype, shape}, value)
                           : floatTensor(ctx, index);
}

// new = (1 - momentum) * running + momentum * batch, written to the buffer.
void updateRunningStatistic(LoweringContext& ctx, ir::Value* running, ir::Value* batch,
                            double momentum, double factor) {
  ir::Value* kept = affine(ctx, running, 1.0 - momentum, 0.0);
  // Batch statistics are float32; float16 running statistics
  // (runningStatisticsAlwaysFloat off) take them in float16.
  ir::Value* fresh = affine(ctx, castTo(ctx, batch, running->type().dtype), momentum * factor, 0.0);
  ctx.assign(running, ctx.emit(ir::OpKind::Add, {kept, fresh}));
}

// batch_norm with the batch's own statistics (training, or no running
// statistics): batch_norm_train, then the running statistics updated with the
// unbiased batch variance, as PyTorch does.
void lowerBatchNormWithBatchStatistics(LoweringContext& ctx, ir::Value* x) {
  const ir::Shape channels = {x->type().shape[1]};
  const std::vector<ir::Value*> outputs =
      ctx.emitMulti(ir::OpKind::BatchNormTrain,
                    {x, tensorOr(ctx, 1, channels, 1.0f), tensorOr(ctx, 2, channels, 0.0f)},
                    {{"eps", ctx.toDouble(7)}});
  ctx.setOutput(0, outputs[0]);
  if (ctx.isNone(3) || ctx.isNone(4)) {
    return;
  }
  if (ctx.isNone(6)) {
    ctx.unsupported("batch_norm with momentum=None (a cumulative moving average) in training; "
                    "give the BatchNorm module a momentum");
  }
  const double momentum = ctx.toDouble(6);
  const double count = static_cast<double>(x->type().numel() / x->type().shape[1]);
  updateRunningStatistic(ctx, floatTensor(ctx, 3), outputs[1], momentum, 1.0);
  updateRunningStatistic(ctx, floatTensor(ctx, 4), outputs[2], momentum, count / (count - 1.0));
}

// aten::batch_norm(input, weight, bias, running_mean, running_var, training,
//                  momentum, eps, cudnn_enabled).
void lowerBatchNorm(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  if (x->type().rank() < 2) {
    ctx.unsupported("batch_norm of a tensor of rank " + std::to_string(x->type().rank()));
  }
  if (ctx.toBool(5) || ctx.isNone(3) || ctx.isNone(4)) {
    lowerBatchNormWithBatchStatistics(ctx, x);
    return;
  }
  const ir::Shape channels = {x->type().shape[1]};
  ctx.setOutput(0, ctx.emit(ir::OpKind::BatchNorm,
                            {x, floatTensor(ctx, 3), floatTensor(ctx, 4),
                             tensorOr(ctx, 1, channels, 1.0f), tensorOr(ctx, 2, channels, 0.0f)},
                            {{"eps", ctx.toDouble(7)}}));
}

// aten::layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable)
void lowerLayerNorm(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  const std::vector<int64_t> normalized = ctx.toIntList(1);
  const int64_t ndim = static_cast<int64_t>(normalized.size());
  if (ndim == 0 || ndim > x->type().rank() ||
      !std::equal(normalized.begin(), normalized.end(), x->type().shape.end() - ndim)) {
    ctx.unsupported("normalized_shape does not match the trailing dimensions of the input " +
                    x->type().str());
  }
  ctx.setOutput(
      0, ctx.emit(ir::OpKind::LayerNorm,
                  {x, tensorOr(ctx, 2, normalized, 1.0f), tensorOr(ctx, 3, normalized, 0.0f)},
                  {{"normalized_ndim", ndim}, {"eps", ctx.toDouble(4)}}));
}

// x [N, C, *] normalised over each of `groups` groups of channels (and all
// their positions) of each sample: a layer norm over the groups reshaped to
// [N, groups, C / groups * positions], then the per-channel affine.
ir::Value* normalizeGroups(LoweringContext& ctx, ir::Value* x, int64_t groups,
                           std::optional<size_t> weightIndex, std::optional<size_t> biasIndex,
                           double eps) {
  const ir::Shape shape = x->type().shape;
  if (shape.size() < 2 || groups <= 0 || shape[1] % groups != 0) {
    ctx.unsupported("normalising " + x->type().str() + " in " + std::to_string(groups) +
                    " groups (the channels, dimension 1, must divide into them)");
  }
  const int64_t perGroup = x->type().numel() / (shape[0] * groups);
  ir::Value* grouped = reshape(ctx, x, {shape[0], groups, perGroup});
  const ir::Shape row = {perGroup};
  ir::Value* normalized = ctx.emit(ir::OpKind::LayerNorm,
                                   {grouped, constantFilled(ctx, {x->type().dtype, row}, 1.0),
                                    constantFilled(ctx, {x->type().dtype, row}, 0.0)},
                                   {{"normalized_ndim", int64_t{1}}, {"eps", eps}});
  ir::Value* y = reshape(ctx, normalized, shape);
  ir::Shape channel(shape.size() - 1, 1);
  channel[0] = shape[1];
  if (weightIndex.has_value() && !ctx.isNone(*weightIndex)) {
    y = ctx.emit(ir::OpKind::Mul, {y, reshape(ctx, floatTensor(ctx, *weightIndex), channel)});
  }
  if (biasIndex.has_value() && !ctx.isNone(*biasIndex)) {
    y = ctx.emit(ir::OpKind::Add, {y, reshape(ctx, floatTensor(ctx, *biasIndex), channel)});
  }
  return y;
}

// aten::group_norm(input, num_groups, weight, bias, eps, cudnn_enabled)
void lowerGroupNorm(LoweringContext& ctx) {
  ctx.setOutput(0, normalizeGroups(ctx, floatTensor(ctx, 0), ctx.toInt(1), 2, 3, ctx.toDouble(4)));
}

// InstanceNorm's running statistics in training, as PyTorch updates them:
// each channel's running mean moves towards the mean over the samples of
// their own means, the running variance towards the mean of their unbiased
// variances (no gradient flows into either).
void updateInstanceStatistics(LoweringContext& ctx, ir::Value* x) {
  if (ctx.isNone(6)) {
    ctx.unsupported("instance_norm with momentum=None (a cumulative moving average) in "
                    "training; give the InstanceNorm module a momentum");
  }
  const ir::Shape& shape = x->type().shape;
  const int64_t positions = x->type().numel() / (shape[0] * shape[1]);
  ir::Value* rows =
      reshape(ctx, ctx.emit(ir::OpKind::StopGradient, {x}, {}), {shape[0], shape[1], positions});
  const auto mean = [&](ir::Value* v, int64_t dim, bool keepdim) {
    return ctx.emit(ir::OpKind::ReduceMean, {v},
                    {{"dims", std::vector<int64_t>{dim}}, {"keepdim", keepdim}});
  };
  ir::Value* means = mean(rows, 2, true);
  ir::Value* deviations = ctx.emit(ir::OpKind::Sub, {rows, means});
  ir::Value* variances = mean(ctx.emit(ir::OpKind::Mul, {deviations, deviations}), 2, false);
  const double momentum = ctx.toDouble(6);
  const double count = static_cast<double>(positions);
  updateRunningStatistic(ctx, floatTensor(ctx, 3),
                         mean(reshape(ctx, means, {shape[0], shape[1]}), 0, false), momentum, 1.0);
  updateRunningStatistic(ctx, floatTensor(ctx, 4), mean(variances, 0, false), momentum,
                         count / (count - 1.0));
}

// aten::instance_norm(input, weight, bias, running_mean, running_var,
//                     use_input_stats, momentum, eps, cudnn_enabled): each
// sample's channels normalised by their own statistics, or by the running
// statistics (eval with track_running_stats), as a batch norm.
void lowerInstanceNorm(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  if (!ctx.toBool(5)) {
    const ir::Shape channels = {x->type().shape[1]};
    ctx.setOutput(0, ctx.emit(ir::OpKind::BatchNorm,
                              {x, floatTensor(ctx, 3), floatTensor(ctx, 4),
                               tensorOr(ctx, 1, channels, 1.0f), tensorOr(ctx, 2, channels, 0.0f)},
                              {{"eps", ctx.toDouble(7)}}));
    return;
  }
  ctx.setOutput(0, normalizeGroups(ctx, x, x->type().shape[1], 1, 2, ctx.toDouble(7)));
  if (!ctx.isNone(3) && !ctx.isNone(4)) updateInstanceStatistics(ctx, x);
}

} // namespace

void registerNormalization(LoweringRegistry& registry) {
  registry.add("aten::group_norm", lowerGroupNorm);
  registry.add("aten::instance_norm", lowerInstanceNorm);
  registry.add("aten::batch_norm", lowerBatchNorm);
  registry.add("aten::layer_norm", lowerLayerNorm);
}

} // namespace popsim::frontend::lowerings
