#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

namespace popsim::frontend::lowerings {
namespace {

// A missing affine weight or bias stands in as a constant filled with `value`.
ir::Value* tensorOr(LoweringContext& ctx, size_t index, const ir::Shape& shape, float value) {
  return ctx.isNone(index) ? constantFilled(ctx, {ir::DType::Float32, shape}, value)
                           : floatTensor(ctx, index);
}

// new = (1 - momentum) * running + momentum * batch, written to the buffer.
void updateRunningStatistic(LoweringContext& ctx, ir::Value* running, ir::Value* batch,
                            double momentum, double factor) {
  ir::Value* kept = affine(ctx, running, 1.0 - momentum, 0.0);
  ir::Value* fresh = affine(ctx, batch, momentum * factor, 0.0);
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

} // namespace

void registerNormalization(LoweringRegistry& registry) {
  registry.add("aten::batch_norm", lowerBatchNorm);
  registry.add("aten::layer_norm", lowerLayerNorm);
}

} // namespace popsim::frontend::lowerings
